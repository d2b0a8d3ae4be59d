//! A case found by its name without reading every case: an index of the names, built on first use
//! and built again when the cases changed under it (a case renamed, added or removed in memory).

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

use super::Case;

/// Each name's first case (a prompt's case names are distinct: the file's reader and the
/// workbench refuse a second case of the same name).
#[derive(Default)]
pub(super) struct CaseNames(Mutex<HashMap<String, usize>>);

impl CaseNames {
    /// The index of the first case of `cases` named `name`.
    pub(super) fn find(&self, cases: &[Case], name: &str) -> Option<usize> {
        let mut index = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(&at) = index.get(name) {
            if cases.get(at).is_some_and(|case| case.name == name) {
                return Some(at);
            }
        }
        // Unknown, or the cases changed since the index was made: made again from the cases as they are.
        index.clear();
        for (at, case) in cases.iter().enumerate() {
            index.entry(case.name.clone()).or_insert(at);
        }
        index.get(name).copied()
    }
}

/// A copy starts with no index (it is made on its first use).
impl Clone for CaseNames {
    fn clone(&self) -> Self {
        CaseNames::default()
    }
}

/// An index says nothing about the prompt: two prompts are equal whatever their indexes hold.
impl PartialEq for CaseNames {
    fn eq(&self, _: &CaseNames) -> bool {
        true
    }
}

impl std::fmt::Debug for CaseNames {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CaseNames")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn case(name: &str) -> Case {
        Case { name: name.into(), ..Case::default() }
    }

    #[test]
    fn a_case_is_found_after_the_cases_change_under_the_index() {
        let names = CaseNames::default();
        let mut cases = vec![case("a"), case("b"), case("c")];
        assert_eq!(names.find(&cases, "b"), Some(1));
        cases.remove(0);
        assert_eq!(names.find(&cases, "b"), Some(0), "moved");
        cases[0].name = "renamed".into();
        assert_eq!(names.find(&cases, "b"), None, "renamed away");
        assert_eq!(names.find(&cases, "renamed"), Some(0));
        cases.push(case("d"));
        assert_eq!(names.find(&cases, "d"), Some(2), "added");
    }
}
