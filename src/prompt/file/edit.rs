//! Saving over a prompt file in place: the file's own text edited with `toml_edit`, so comments,
//! quoting, key order and spacing stay byte for byte and only the values that changed are rewritten
//! (a changed string keeps its quoting style, a changed case only its own lines).

use serde_json::{Map, Value as Json};
use toml_edit::{Array, ArrayOfTables, DocumentMut, InlineTable, Item, Table, Value};

use super::save::{fields, pretty_json};
use super::{PromptError, PromptFile};

/// `text`, which reads as `old`, with `new` written over it: a key whose value is the same in both
/// is left as written, a changed one is rewritten down to the values that differ. `schema_text` is the
/// inline schema as the author typed it (written as is when it differs from the file's).
pub(super) fn edit(
    text: &str,
    old: &PromptFile,
    new: &PromptFile,
    schema_text: Option<&str>,
) -> Result<String, PromptError> {
    let not_toml = |message: String| PromptError::NotToml { id: new.id.clone(), message };
    let (bom, body) = match text.strip_prefix('\u{feff}') {
        Some(body) => ("\u{feff}", body),
        None => ("", text),
    };
    let mut doc: DocumentMut = body.parse().map_err(|e: toml_edit::TomlError| not_toml(e.message().to_string()))?;
    let (old_fields, new_fields) = (fields(old)?, fields(new)?);
    let mut changed = false;
    let keys: Vec<&String> =
        new_fields.keys().chain(old_fields.keys().filter(|k| !new_fields.contains_key(*k))).collect();
    for key in keys {
        let (before, after) = (old_fields.get(key), new_fields.get(key));
        let schema_retyped = key == "schema" && schema_text.is_some_and(|t| retyped(&doc, t));
        if before == after && !schema_retyped {
            continue;
        }
        changed = true;
        let root = doc.as_table_mut();
        match (key.as_str(), after) {
            (_, None) => {
                root.remove(key);
            }
            ("cases", Some(after)) => edit_cases(root, before, after).map_err(not_toml)?,
            ("schema", Some(after)) => edit_schema(root, after, schema_text).map_err(not_toml)?,
            (_, Some(after)) => set(root, key, after).map_err(not_toml)?,
        }
    }
    if !changed {
        return Ok(text.to_string());
    }
    Ok(format!("{bom}{doc}"))
}

/// The `schema` string of a prompt file's text (JSON written in a TOML string).
pub(super) fn written_schema(text: &str) -> Option<String> {
    let doc: DocumentMut = text.strip_prefix('\u{feff}').unwrap_or(text).parse().ok()?;
    doc.get("schema").and_then(Item::as_str).map(str::to_string)
}

/// `text`, the result of an edit, read back: it must say what `new` says (else nothing may be written).
pub(super) fn reads_back(text: &str, path: &std::path::Path, new: &PromptFile) -> Result<PromptFile, PromptError> {
    let prompt = PromptFile::from_toml_str(text, path)?;
    let (back, new_fields) = (fields(&prompt)?, fields(new)?);
    match new_fields.iter().find(|(k, v)| !back.get(*k).is_some_and(|b| same(b, v))) {
        None if back.len() == new_fields.len() => Ok(prompt),
        found => Err(PromptError::NotToml {
            id: new.id.clone(),
            message: format!(
                "the edited file would not read back as the prompt (at `{}`); nothing was written",
                found.map_or("?", |(k, _)| k.as_str())
            ),
        }),
    }
}

/// Whether the schema pane's text differs from the inline schema string the file holds.
fn retyped(doc: &DocumentMut, typed: &str) -> bool {
    match doc.get("schema").and_then(Item::as_str) {
        Some(written) => written.trim_end() != typed.trim_end(),
        None => false,
    }
}

/// `table[key]` made to hold `value`, rewriting only what differs.
fn set(table: &mut Table, key: &str, value: &Json) -> Result<(), String> {
    match table.get_mut(key) {
        Some(item) => reconcile_item(item, key, value),
        None => {
            table.insert(key, new_item(key, value)?);
            Ok(())
        }
    }
}

/// The cases: matched by name (a renamed case by its place), each changed case edited where it is,
/// removed ones removed, new ones inserted after the case they follow.
fn edit_cases(root: &mut Table, before: Option<&Json>, after: &Json) -> Result<(), String> {
    let empty = Vec::new();
    let old = before.and_then(Json::as_array).unwrap_or(&empty);
    let new = after.as_array().unwrap_or(&empty);
    if !root.contains_key("cases") {
        return set(root, "cases", after);
    }
    let pairs = pair_cases(old, new);
    let Some(item) = root.get_mut("cases") else { return Ok(()) };
    let mut list = match CaseList::of(item) {
        Some(list) => list,
        None => return reconcile_item(item, "cases", after),
    };
    let old_name = |i: usize| case_name(&old[i]);
    // Gone: the old cases no new one continues.
    let mut gone: Vec<usize> =
        (0..old.len()).filter(|i| !pairs.contains(&Some(*i))).filter_map(|i| list.find(&old_name(i))).collect();
    gone.sort_unstable();
    gone.dedup();
    for at in gone.into_iter().rev() {
        list.remove(at);
    }
    // Changed: edited where they are.
    let index: std::collections::HashMap<Option<String>, usize> =
        list.names().into_iter().enumerate().map(|(i, n)| (n, i)).rev().collect();
    for (new_case, pair) in new.iter().zip(&pairs) {
        let Some(old_case) = *pair else { continue };
        if old.get(old_case) == Some(new_case) {
            continue;
        }
        if let Some(&at) = index.get(&old_name(old_case)) {
            list.reconcile(at, new_case)?;
        }
    }
    // New: after the case they follow in the new order (first of all when they lead).
    let mut names = list.names();
    let mut after_at: Option<usize> = None;
    for (new_case, pair) in new.iter().zip(&pairs) {
        if pair.is_some() {
            let wanted = case_name(new_case);
            after_at = names.iter().position(|n| *n == wanted).or(after_at);
            continue;
        }
        let at = after_at.map_or(0, |a| a + 1).min(names.len());
        list.insert(at, new_case)?;
        names.insert(at, case_name(new_case));
        after_at = Some(at);
    }
    if new.is_empty() {
        root.remove("cases");
    }
    Ok(())
}

fn case_name(case: &Json) -> Option<String> {
    case.get("name").and_then(Json::as_str).map(str::to_string)
}

/// For each new case, the old case it continues: the same name, else (a rename) the same place when
/// that old case is not kept under its own name. Each old case is continued at most once.
fn pair_cases(old: &[Json], new: &[Json]) -> Vec<Option<usize>> {
    let old_names: Vec<Option<String>> = old.iter().map(case_name).collect();
    let new_names: Vec<Option<String>> = new.iter().map(case_name).collect();
    let old_index: std::collections::HashMap<&str, usize> =
        old_names.iter().enumerate().filter_map(|(i, n)| n.as_deref().map(|n| (n, i))).collect();
    let kept: std::collections::HashSet<&str> = new_names.iter().flatten().map(String::as_str).collect();
    let mut taken = std::collections::HashSet::new();
    new_names
        .iter()
        .enumerate()
        .map(|(i, n)| {
            n.as_deref()
                .and_then(|n| old_index.get(n).copied())
                .or_else(|| old_names.get(i).filter(|o| o.as_deref().is_none_or(|o| !kept.contains(o))).map(|_| i))
        })
        .map(|pair| pair.filter(|i| taken.insert(*i)))
        .collect()
}

/// The file's cases, as `[[cases]]` tables or an inline array of tables.
enum CaseList<'a> {
    Tables(&'a mut ArrayOfTables),
    Inline(&'a mut Array),
}

impl<'a> CaseList<'a> {
    fn of(item: &'a mut Item) -> Option<CaseList<'a>> {
        match item {
            Item::ArrayOfTables(tables) => Some(CaseList::Tables(tables)),
            Item::Value(Value::Array(values)) => Some(CaseList::Inline(values)),
            _ => None,
        }
    }

    fn names(&self) -> Vec<Option<String>> {
        match self {
            CaseList::Tables(tables) => {
                tables.iter().map(|t| t.get("name").and_then(Item::as_str).map(str::to_string)).collect()
            }
            CaseList::Inline(values) => values
                .iter()
                .map(|v| v.as_inline_table().and_then(|t| t.get("name")).and_then(Value::as_str).map(str::to_string))
                .collect(),
        }
    }

    fn find(&self, name: &Option<String>) -> Option<usize> {
        self.names().iter().position(|n| n == name)
    }

    fn remove(&mut self, at: usize) {
        match self {
            CaseList::Tables(tables) => {
                tables.remove(at);
            }
            CaseList::Inline(values) => {
                values.remove(at);
            }
        }
    }

    fn reconcile(&mut self, at: usize, case: &Json) -> Result<(), String> {
        match (self, case) {
            (CaseList::Tables(tables), Json::Object(map)) => match tables.get_mut(at) {
                Some(table) => reconcile_table(table, map),
                None => Ok(()),
            },
            (CaseList::Inline(values), case) => match values.get_mut(at) {
                Some(value) => reconcile_value(value, case),
                None => Ok(()),
            },
            _ => Ok(()),
        }
    }

    fn insert(&mut self, at: usize, case: &Json) -> Result<(), String> {
        match (self, case) {
            (CaseList::Tables(tables), Json::Object(map)) => tables.insert(at, new_table(map)?),
            (CaseList::Inline(values), case) => {
                let mut value = new_value(case)?;
                if let Some(like) = values.get(at.min(values.len().saturating_sub(1))) {
                    *value.decor_mut() = like.decor().clone();
                }
                values.insert_formatted(at, value);
            }
            _ => {}
        }
        Ok(())
    }
}

/// The inline schema: JSON text in a string keeps its quoting (and is the author's text when given),
/// a schema written as a TOML table is edited as one.
fn edit_schema(root: &mut Table, after: &Json, typed: Option<&str>) -> Result<(), String> {
    let typed = typed.filter(|t| serde_json::from_str::<Json>(t).ok().as_ref() == Some(after));
    let text = |ends_with_newline: bool| {
        let mut text = typed.map_or_else(|| pretty_json(after, 0), |t| t.trim_end().to_string());
        if ends_with_newline {
            text.push('\n');
        }
        text
    };
    match root.get_mut("schema") {
        Some(Item::Value(value @ Value::String(_))) => {
            let written = value.as_str().unwrap_or_default();
            let new = text(written.ends_with('\n') || written.contains('\n'));
            replace_value(value, new_string(&new, Some(value)))
        }
        Some(item) => reconcile_item(item, "schema", after)?,
        None => {
            let new = text(true);
            root.insert("schema", Item::Value(new_string(&new, None)));
        }
    }
    Ok(())
}

/// `item` made to hold `value`; parts that already hold what `value` says are left as written.
fn reconcile_item(item: &mut Item, key: &str, value: &Json) -> Result<(), String> {
    if plain_item(item).is_some_and(|plain| same(&plain, value)) {
        return Ok(());
    }
    match (&mut *item, value) {
        (Item::Table(table), Json::Object(map)) => reconcile_table(table, map),
        (Item::ArrayOfTables(tables), Json::Array(values)) if values.iter().all(Json::is_object) => {
            for (index, value) in values.iter().enumerate() {
                match (tables.get_mut(index), value) {
                    (Some(table), Json::Object(map)) => reconcile_table(table, map)?,
                    (None, Json::Object(map)) => tables.push(new_table(map)?),
                    _ => {}
                }
            }
            while tables.len() > values.len() {
                tables.remove(tables.len() - 1);
            }
            Ok(())
        }
        (Item::Value(current), value) => reconcile_value(current, value),
        _ => {
            *item = new_item(key, value)?;
            Ok(())
        }
    }
}

/// A table made to hold `map`: keys gone are removed, kept keys reconciled, new keys appended.
fn reconcile_table(table: &mut Table, map: &Map<String, Json>) -> Result<(), String> {
    let stale: Vec<String> = table.iter().map(|(k, _)| k.to_string()).filter(|k| !map.contains_key(k)).collect();
    for key in stale {
        table.remove(&key);
    }
    for (key, value) in map {
        set(table, key, value)?;
    }
    Ok(())
}

/// A value made to hold `new`: inline tables and arrays member by member, anything else replaced
/// with its decoration (the spaces and comments around it) kept.
fn reconcile_value(value: &mut Value, new: &Json) -> Result<(), String> {
    if plain_value(value).is_some_and(|plain| same(&plain, new)) {
        return Ok(());
    }
    match (&mut *value, new) {
        (Value::InlineTable(table), Json::Object(map)) => {
            let stale: Vec<String> =
                table.iter().map(|(k, _)| k.to_string()).filter(|k| !map.contains_key(k)).collect();
            for key in stale {
                table.remove(&key);
            }
            for (key, member) in map {
                match table.get_mut(key) {
                    Some(current) => reconcile_value(current, member)?,
                    None => {
                        table.insert(key, new_value(member)?);
                    }
                }
            }
            Ok(())
        }
        (Value::Array(array), Json::Array(items)) => {
            for (index, item) in items.iter().enumerate() {
                match array.get_mut(index) {
                    Some(current) => reconcile_value(current, item)?,
                    None => push_like_siblings(array, new_value(item)?),
                }
            }
            while array.len() > items.len() {
                array.remove(array.len() - 1);
            }
            if array.is_empty() {
                array.set_trailing("");
                array.set_trailing_comma(false);
            }
            Ok(())
        }
        (current, new) => {
            let replacement = match new {
                Json::String(s) => new_string(s, Some(current)),
                other => new_value(other)?,
            };
            replace_value(current, replacement);
            Ok(())
        }
    }
}

/// `current` replaced by `replacement`, keeping the decoration around it.
fn replace_value(current: &mut Value, mut replacement: Value) {
    *replacement.decor_mut() = current.decor().clone();
    *current = replacement;
}

/// Appends `value` laid out as the array's items are: one per line when they are (or when the array
/// was empty and the items do not fit a line), else after a space.
fn push_like_siblings(array: &mut Array, mut value: Value) {
    let multiline = match array.iter().last() {
        Some(last) => last.decor().prefix().and_then(|p| p.as_str()).is_some_and(|p| p.contains('\n')),
        None => false,
    };
    let prefix = array
        .iter()
        .last()
        .and_then(|last| last.decor().prefix().and_then(|p| p.as_str()).map(str::to_string))
        .unwrap_or_default();
    let empty_and_long = array.is_empty() && value.to_string().trim().len() > 40;
    if multiline || empty_and_long {
        let prefix = if multiline { prefix } else { "\n  ".to_string() };
        value.decor_mut().set_prefix(prefix);
        value.decor_mut().set_suffix("");
        array.push_formatted(value);
        array.set_trailing_comma(true);
        if !array.trailing().as_str().is_some_and(|t| t.contains('\n')) {
            array.set_trailing("\n");
        }
    } else {
        array.push(value);
    }
}

/// A new item for `key` in a table: the file's sections (`cases`, `checks`) and big objects as
/// tables, everything else as an inline value.
fn new_item(key: &str, value: &Json) -> Result<Item, String> {
    match value {
        Json::Array(items) if matches!(key, "cases" | "checks") && items.iter().all(Json::is_object) => {
            let mut tables = ArrayOfTables::new();
            for item in items {
                if let Json::Object(map) = item {
                    tables.push(new_table(map)?);
                }
            }
            Ok(Item::ArrayOfTables(tables))
        }
        Json::Object(map) if value.to_string().len() > 60 || map.values().any(is_table_worthy) => {
            Ok(Item::Table(new_table(map)?))
        }
        other => Ok(Item::Value(new_value(other)?)),
    }
}

/// Whether a member would read better as a table or array of tables of its own.
fn is_table_worthy(value: &Json) -> bool {
    matches!(value, Json::Array(items) if !items.is_empty() && items.iter().all(Json::is_object) && value.to_string().len() > 60)
}

fn new_table(map: &Map<String, Json>) -> Result<Table, String> {
    let mut table = Table::new();
    for (key, value) in map {
        table.insert(key, new_item(key, value)?);
    }
    Ok(table)
}

/// A new inline value (strings in the default style for their content).
fn new_value(value: &Json) -> Result<Value, String> {
    Ok(match value {
        Json::Null => return Err("a null value, which TOML cannot hold".into()),
        Json::Bool(b) => Value::from(*b),
        Json::Number(n) => match n.as_i64() {
            Some(i) => Value::from(i),
            None => Value::from(n.as_f64().unwrap_or_default()),
        },
        Json::String(s) => new_string(s, None),
        Json::Array(items) => {
            let mut array = Array::new();
            for item in items {
                push_like_siblings(&mut array, new_value(item)?);
            }
            Value::Array(array)
        }
        Json::Object(map) => {
            let mut table = InlineTable::new();
            for (key, member) in map {
                table.insert(key, new_value(member)?);
            }
            Value::InlineTable(table)
        }
    })
}

/// `s` as a TOML string in the style of `like` (literal or basic, one line or several) where `s` can
/// be written that way; a multi-line string opens with a newline (which TOML drops).
fn new_string(s: &str, like: Option<&Value>) -> Value {
    let raw = like.and_then(|v| match v {
        Value::String(f) => f.as_repr().and_then(|r| r.as_raw().as_str()).map(str::to_string),
        _ => None,
    });
    let raw = raw.as_deref().unwrap_or("");
    let literal_style = raw.starts_with('\'');
    let plain = |c: char| c == '\t' || !c.is_control();
    let candidates: Vec<String> = if s.contains('\n') {
        let literal_ok = !s.contains("'''") && !s.ends_with('\'') && s.chars().all(|c| c == '\n' || plain(c));
        let literal = format!("'''\n{s}'''");
        let basic = format!("\"\"\"\n{}\"\"\"", escape_basic(s, true));
        let prefer_basic = raw.starts_with("\"\"\"") || (raw.starts_with('"') && !raw.starts_with("\"\"\""));
        match (literal_ok, prefer_basic && !literal_style) {
            (true, false) => vec![literal, basic],
            _ => vec![basic],
        }
    } else {
        let literal_ok = !s.contains('\'') && s.chars().all(plain);
        let basic = format!("\"{}\"", escape_basic(s, false));
        if literal_style && literal_ok {
            vec![format!("'{s}'"), basic]
        } else {
            vec![basic]
        }
    };
    for candidate in candidates {
        if let Ok(value) = candidate.parse::<Value>() {
            if value.as_str() == Some(s) {
                return value;
            }
        }
    }
    Value::from(s)
}

/// `s` escaped for a basic string (`multiline`: newlines and tabs kept, runs of quotes broken up).
fn escape_basic(s: &str, multiline: bool) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' if multiline && out.ends_with("\"\"") => out.push_str("\\\""),
            '"' if !multiline => out.push_str("\\\""),
            '\n' if multiline => out.push('\n'),
            '\t' => out.push('\t'),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            c if c.is_control() => out.push_str(&format!("\\u{:04X}", c as u32)),
            c => out.push(c),
        }
    }
    if multiline && out.ends_with('"') {
        out.pop();
        out.push_str("\\\"");
    }
    out
}

/// What an item says, as JSON (`None`: something JSON cannot hold, such as a NaN).
fn plain_item(item: &Item) -> Option<Json> {
    match item {
        Item::None => None,
        Item::Value(value) => plain_value(value),
        Item::Table(table) => table
            .iter()
            .map(|(k, v)| plain_item(v).map(|v| (k.to_string(), v)))
            .collect::<Option<Map<_, _>>>()
            .map(Json::Object),
        Item::ArrayOfTables(tables) => {
            tables.iter().map(|t| plain_item(&Item::Table(t.clone()))).collect::<Option<Vec<_>>>().map(Json::Array)
        }
    }
}

fn plain_value(value: &Value) -> Option<Json> {
    Some(match value {
        Value::String(s) => Json::String(s.value().clone()),
        Value::Integer(i) => Json::from(*i.value()),
        Value::Float(f) => Json::from(serde_json::Number::from_f64(*f.value())?),
        Value::Boolean(b) => Json::Bool(*b.value()),
        Value::Datetime(d) => Json::String(d.value().to_string()),
        Value::Array(array) => Json::Array(array.iter().map(plain_value).collect::<Option<_>>()?),
        Value::InlineTable(table) => {
            Json::Object(table.iter().map(|(k, v)| plain_value(v).map(|v| (k.to_string(), v))).collect::<Option<_>>()?)
        }
    })
}

/// JSON equality where `1` and `1.0` are the same number and members are compared by name.
fn same(a: &Json, b: &Json) -> bool {
    match (a, b) {
        (Json::Number(x), Json::Number(y)) => match (x.as_i64(), y.as_i64()) {
            (Some(x), Some(y)) => x == y,
            _ => x.as_f64() == y.as_f64(),
        },
        (Json::Array(x), Json::Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(x, y)| same(x, y)),
        (Json::Object(x), Json::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same(v, w)))
        }
        _ => a == b,
    }
}

#[cfg(test)]
#[path = "edit_tests.rs"]
mod tests;
