//! Field lists as the prompt file names them: a field name (`"entity"`) or a JSON Pointer
//! (`"/address/city"`), one or several (`match = "entity"`, `match = ["subject", "object"]`).

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// One field or several, each a name or a JSON Pointer; written back as it was (one as a string).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fields(pub Vec<String>);

impl Fields {
    /// Each field as a JSON Pointer (a name `n` is `/n`).
    pub fn pointers(&self) -> Vec<String> {
        self.0.iter().map(|f| pointer(f)).collect()
    }
}

/// A field name as a JSON Pointer: `entity` → `/entity` (`~` and `/` escaped); a pointer (`""` or
/// starting with `/`) as is.
pub fn pointer(field: &str) -> String {
    if field.is_empty() || field.starts_with('/') {
        field.to_string()
    } else {
        format!("/{}", field.replace('~', "~0").replace('/', "~1"))
    }
}

/// Why `pointer` is not a JSON Pointer (RFC 6901), if it is not.
pub fn pointer_error(pointer: &str) -> Option<String> {
    if !pointer.is_empty() && !pointer.starts_with('/') {
        return Some(format!("{pointer:?} is not a JSON Pointer (write \"/{pointer}\")"));
    }
    let mut chars = pointer.chars();
    while let Some(c) = chars.next() {
        if c == '~' && !matches!(chars.next(), Some('0' | '1')) {
            return Some(format!(
                "{pointer:?} is not a JSON Pointer: `~` is followed by 0 or 1 (~0 is `~`, ~1 is `/`)"
            ));
        }
    }
    None
}

/// The first segment of a pointer, unescaped (`None` for the root).
pub fn first_segment(pointer: &str) -> Option<String> {
    let rest = pointer.strip_prefix('/')?;
    let segment = rest.split('/').next().unwrap_or_default();
    Some(segment.replace("~1", "/").replace("~0", "~"))
}

impl Serialize for Fields {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self.0.as_slice() {
            [one] => serializer.serialize_str(one),
            many => many.serialize(serializer),
        }
    }
}

impl<'de> Deserialize<'de> for Fields {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Fields, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum OneOrMany {
            One(String),
            Many(Vec<String>),
        }
        match OneOrMany::deserialize(deserializer) {
            Ok(OneOrMany::One(one)) => Ok(Fields(vec![one])),
            Ok(OneOrMany::Many(many)) if !many.is_empty() => Ok(Fields(many)),
            Ok(OneOrMany::Many(_)) => Err(serde::de::Error::custom("an empty list of fields")),
            Err(_) => Err(serde::de::Error::custom("a field name, a JSON Pointer, or a list of them")),
        }
    }
}
