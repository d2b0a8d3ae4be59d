//! The cuts a sweep reads, described without one entry per cut where the unit allows: every
//! character (nothing stored, read off the text), a list of unit ends (4 bytes a cut), or any list of
//! `(position, byte offset)` pairs; and a [`Cursor`] that walks them, from the start or from any cut
//! whose offset is known.

use super::strategy::prefix;

/// Byte offsets in ascending order, kept as `u32` (4 bytes each) while they fit.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Offsets {
    Narrow(Vec<u32>),
    Wide(Vec<usize>),
}

impl Offsets {
    pub fn len(&self) -> usize {
        match self {
            Offsets::Narrow(offsets) => offsets.len(),
            Offsets::Wide(offsets) => offsets.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn get(&self, at: usize) -> Option<usize> {
        match self {
            Offsets::Narrow(offsets) => offsets.get(at).map(|&offset| offset as usize),
            Offsets::Wide(offsets) => offsets.get(at).copied(),
        }
    }

    /// Appends an offset (widening the list when it no longer fits 4 bytes).
    pub fn push(&mut self, offset: usize) {
        match (&mut *self, u32::try_from(offset)) {
            (Offsets::Narrow(offsets), Ok(narrow)) => offsets.push(narrow),
            (Offsets::Narrow(offsets), Err(_)) => {
                let mut wide: Vec<usize> = offsets.iter().map(|&o| o as usize).collect();
                wide.push(offset);
                *self = Offsets::Wide(wide);
            }
            (Offsets::Wide(offsets), _) => offsets.push(offset),
        }
    }

    /// The offsets in order.
    pub fn iter(&self) -> impl Iterator<Item = usize> + '_ {
        (0..self.len()).filter_map(|at| self.get(at))
    }
}

impl From<&[usize]> for Offsets {
    fn from(offsets: &[usize]) -> Self {
        match offsets.iter().map(|&offset| u32::try_from(offset)).collect() {
            Ok(narrow) => Offsets::Narrow(narrow),
            Err(_) => Offsets::Wide(offsets.to_vec()),
        }
    }
}

impl From<Vec<usize>> for Offsets {
    fn from(offsets: Vec<usize>) -> Self {
        Offsets::from(offsets.as_slice())
    }
}

/// Where a sweep cuts a text. Every cut's byte offset is clamped to the text, moved down to a
/// character boundary, and never read below the previous cut's.
#[derive(Clone, Copy, Debug)]
pub enum Points<'a> {
    /// Cut `i` keeps the first `i` characters, for every `i` from 0 to the whole text.
    Chars,
    /// Cut 0 keeps nothing, cut `i + 1` keeps the text up to `ends[i]`.
    Ends(&'a Offsets),
    /// Cut `i` is `list[i]`: a position as the caller counts it, and a byte offset.
    List(&'a [(usize, usize)]),
}

impl Points<'_> {
    /// The position of cut `index` as the caller counts it (the index itself but for a list).
    pub fn position(&self, index: usize) -> usize {
        match self {
            Points::Chars | Points::Ends(_) => index,
            Points::List(list) => list.get(index).map_or(index, |&(position, _)| position),
        }
    }
}

/// Walks the cuts of a text in order, yielding each one's byte offset.
#[derive(Clone, Debug)]
pub struct Cursor<'a> {
    text: &'a str,
    points: Points<'a>,
    /// The index of the next cut.
    index: usize,
    /// The offset of the previous cut (0 before the first).
    fed: usize,
    /// The next cut's offset when it is already known.
    known: Option<usize>,
}

impl<'a> Cursor<'a> {
    /// From the first cut.
    pub fn new(text: &'a str, points: Points<'a>) -> Self {
        Cursor { text, points, index: 0, fed: 0, known: None }
    }

    /// From cut `index`, whose offset (as a cursor gave it) is `offset`.
    pub fn resume(text: &'a str, points: Points<'a>, index: usize, offset: usize) -> Self {
        Cursor { text, points, index, fed: 0, known: Some(offset) }
    }
}

impl Iterator for Cursor<'_> {
    type Item = usize;

    fn next(&mut self) -> Option<usize> {
        let offset = match (self.known.take(), self.points) {
            (Some(offset), _) => offset,
            (None, Points::Chars) if self.index == 0 => 0,
            (None, Points::Chars) => {
                let next = self.text.get(self.fed..)?.chars().next()?;
                self.fed + next.len_utf8()
            }
            (None, Points::Ends(_)) if self.index == 0 => 0,
            (None, Points::Ends(ends)) => prefix(self.text, ends.get(self.index - 1)?).len().max(self.fed),
            (None, Points::List(list)) => prefix(self.text, list.get(self.index)?.1).len().max(self.fed),
        };
        self.index += 1;
        self.fed = offset;
        Some(offset)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_walk_and_resume() {
        let text = "aé🧬";
        let all = |points| Cursor::new(text, points).collect::<Vec<_>>();
        assert_eq!(all(Points::Chars), [0, 1, 3, 7]);
        assert_eq!(Cursor::resume(text, Points::Chars, 2, 3).collect::<Vec<_>>(), [3, 7]);
        let ends = Offsets::from(vec![2, 1, 9]);
        assert_eq!(all(Points::Ends(&ends)), [0, 1, 1, 7], "down to a boundary, never below the last");
        let list = [(5, 3), (6, 100)];
        assert_eq!(all(Points::List(&list)), [3, 7]);
        assert_eq!(Points::List(&list).position(1), 6);
        assert_eq!(Cursor::resume(text, Points::List(&list), 1, 3).collect::<Vec<_>>(), [3]);
        assert_eq!(Cursor::new("", Points::Chars).collect::<Vec<_>>(), [0]);
    }
}
