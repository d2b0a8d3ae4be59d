//! The type tree of a PtcRunner signature and its rendering back to signature syntax.

use std::fmt;

/// One type of PtcRunner's signature grammar (signature/parser.ex @ec1a0b9d, plus the later
/// `:datetime`).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum SigType {
    /// `:string`
    String,
    /// `:int`
    Int,
    /// `:float` (accepts integers too)
    Float,
    /// `:bool` (`:boolean` is the later alias)
    Bool,
    /// `:keyword` (an Elixir atom; schema `string`)
    Keyword,
    /// `:map`, a map with any keys
    Map,
    /// `:any`
    Any,
    /// `:datetime` (added 2026-05): an ISO 8601 string with an offset
    Datetime,
    /// `T?`: absent or null is fine. The grammar only puts `?` after a primitive keyword.
    Optional(Box<SigType>),
    /// `[T]`
    List(Box<SigType>),
    /// `{name T, name T}`, fields in declaration order (duplicates kept, as PtcRunner does)
    Fields(Vec<(String, SigType)>),
}

/// A parsed signature: the parameters (the input) and the return type (the output).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Signature {
    pub params: Vec<(String, SigType)>,
    pub returns: SigType,
}

impl Signature {
    /// Field names declared twice in one map, parameters included. PtcRunner accepts them (the last
    /// type wins) and lists the name twice in the schema's `required`, which JSON Schema's
    /// meta-schema rejects, so a strict server or validator refuses that schema.
    pub fn repeated_fields(&self) -> Vec<String> {
        let mut found = Vec::new();
        repeated(&self.params, &mut found);
        self.returns.repeated_into(&mut found);
        found
    }
}

fn repeated(fields: &[(String, SigType)], found: &mut Vec<String>) {
    for (at, (name, ty)) in fields.iter().enumerate() {
        if fields[..at].iter().any(|(seen, _)| seen == name) && !found.contains(name) {
            found.push(name.clone());
        }
        ty.repeated_into(found);
    }
}

impl SigType {
    fn repeated_into(&self, found: &mut Vec<String>) {
        match self {
            SigType::Fields(fields) => repeated(fields, found),
            SigType::List(inner) | SigType::Optional(inner) => inner.repeated_into(found),
            _ => {}
        }
    }

    /// The keyword of a primitive type without its colon (`"string"`), `None` for the others.
    pub fn keyword(&self) -> Option<&'static str> {
        Some(match self {
            SigType::String => "string",
            SigType::Int => "int",
            SigType::Float => "float",
            SigType::Bool => "bool",
            SigType::Keyword => "keyword",
            SigType::Map => "map",
            SigType::Any => "any",
            SigType::Datetime => "datetime",
            SigType::Optional(_) | SigType::List(_) | SigType::Fields(_) => return None,
        })
    }

    /// The type inside `T?`, and whether it was optional.
    pub fn unwrap_optional(&self) -> (&SigType, bool) {
        match self {
            SigType::Optional(inner) => (inner, true),
            other => (other, false),
        }
    }
}

impl fmt::Display for SigType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SigType::Optional(inner) => write!(f, "{inner}?"),
            SigType::List(inner) => write!(f, "[{inner}]"),
            SigType::Fields(fields) => {
                f.write_str("{")?;
                write_fields(f, fields)?;
                f.write_str("}")
            }
            primitive => write!(f, ":{}", primitive.keyword().unwrap_or("any")),
        }
    }
}

/// Renders `(p :T, …) -> R`; with no parameters, `() -> R` (which parses back, unlike PtcRunner's
/// `-> R`).
impl fmt::Display for Signature {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("(")?;
        write_fields(f, &self.params)?;
        write!(f, ") -> {}", self.returns)
    }
}

fn write_fields(f: &mut fmt::Formatter<'_>, fields: &[(String, SigType)]) -> fmt::Result {
    for (index, (name, ty)) in fields.iter().enumerate() {
        if index > 0 {
            f.write_str(", ")?;
        }
        write!(f, "{name} {ty}")?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_types_in_signature_syntax() {
        let ty = SigType::Fields(vec![
            ("id".into(), SigType::Int),
            ("email".into(), SigType::Optional(Box::new(SigType::String))),
            ("tags".into(), SigType::List(Box::new(SigType::Keyword))),
            ("meta".into(), SigType::Fields(vec![])),
        ]);
        assert_eq!(ty.to_string(), "{id :int, email :string?, tags [:keyword], meta {}}");
    }

    #[test]
    fn renders_signatures_with_and_without_params() {
        let sig = Signature { params: vec![], returns: SigType::Any };
        assert_eq!(sig.to_string(), "() -> :any");
        let sig = Signature {
            params: vec![("q".into(), SigType::String), ("n".into(), SigType::Int)],
            returns: SigType::List(Box::new(SigType::Datetime)),
        };
        assert_eq!(sig.to_string(), "(q :string, n :int) -> [:datetime]");
    }
}
