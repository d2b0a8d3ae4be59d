//! Judging a run of complete lines, on every core when the run is large (an answer fed whole).
//!
//! The run is cut at line ends into a few parts per core, which the threads take one by one from a
//! shared counter (so a thread the system holds back simply takes fewer). The first part is judged
//! from the parser's state; every later part from the state "at rest" (no pretty-printed record open,
//! no line held, the first line with content behind us), which is exactly the state the sequential
//! parser would start it from whenever the part before it ends at rest. That is checked in order once
//! all are done: then the part's verdicts are taken as they are; otherwise the part is judged again
//! from the true state. Either way the verdicts, items and line numbers are those of feeding the lines
//! one by one; a stream's small chunks never take this path.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock, PoisonError};

use super::sink::Sink;
use super::Rules;
use crate::schema::Check;

/// Below this many bytes a run is judged on the calling thread (a thread costs tens of microseconds).
const PARALLEL_BYTES: usize = 64 * 1024;
/// Each part gets at least this many lines.
const LINES_PER_PART: usize = 2048;
/// Parts per thread: enough for a thread that is held back to leave its share to the others.
const PARTS_PER_THREAD: usize = 4;
/// At most this many threads, however many cores there are.
const MAX_THREADS: usize = 8;

/// Judges `run` (complete lines, each ending in `\n`) as lines `completed + 1 ..`; returns how many.
pub(super) fn judge_run(
    rules: &mut Rules,
    sink: &mut Sink,
    check: Option<&dyn Check>,
    completed: usize,
    run: &str,
) -> usize {
    let threads = cores().min(MAX_THREADS);
    let parts = if run.len() >= PARALLEL_BYTES && threads > 1 {
        split(run, threads * PARTS_PER_THREAD, true)
    } else {
        Vec::new()
    };
    if parts.len() < 2 {
        return judge_lines(rules, sink, check, completed, run);
    }
    judge_parts(rules, sink, check, completed, &parts, threads).0
}

/// A part judged from the state at rest: the state it ends in, and its verdicts.
type Judged = Mutex<Option<(Rules, Sink)>>;

/// Judges the parts of a run on `threads` threads (this one included); returns how many lines, and
/// how many parts had to be judged again because the part before did not end at rest.
fn judge_parts(
    rules: &mut Rules,
    sink: &mut Sink,
    check: Option<&dyn Check>,
    completed: usize,
    parts: &[Part],
    threads: usize,
) -> (usize, usize) {
    let Some((first, rest)) = parts.split_first() else { return (0, 0) };
    let rested = rules.at_rest();
    let judged: Vec<Judged> = rest.iter().map(|_| Mutex::new(None)).collect();
    let next = AtomicUsize::new(0);
    let work = || loop {
        let index = next.fetch_add(1, Ordering::Relaxed);
        let (Some(part), Some(slot)) = (rest.get(index), judged.get(index)) else { break };
        let mut part_rules = rested.clone();
        let mut part_sink = Sink::default();
        judge_lines(&mut part_rules, &mut part_sink, check, completed + part.before, part.text);
        *slot.lock().unwrap_or_else(PoisonError::into_inner) = Some((part_rules, part_sink));
    };
    std::thread::scope(|scope| {
        for _ in 1..threads {
            scope.spawn(work);
        }
        judge_lines(rules, sink, check, completed + first.before, first.text);
        work();
    });
    let mut redone = 0;
    let judged: Vec<Option<(Rules, Sink)>> =
        judged.into_iter().map(|slot| slot.into_inner().unwrap_or_else(PoisonError::into_inner)).collect();
    let counts = judged.iter().flatten().map(|(_, part)| (part.lines.len(), part.items.len()));
    let (lines, items) =
        counts.fold((0, 0), |(lines, items), (more_lines, more_items)| (lines + more_lines, items + more_items));
    sink.lines.reserve(lines);
    sink.items.reserve(items);
    for (part, slot) in rest.iter().zip(judged) {
        match slot {
            Some((part_rules, part_sink)) if rules.is_at_rest() => {
                *rules = part_rules;
                sink.append(part_sink);
            }
            _ => {
                redone += 1;
                judge_lines(rules, sink, check, completed + part.before, part.text);
            }
        }
    }
    (parts.iter().map(|part| part.lines).sum(), redone)
}

/// Judges the lines of `run` one after the other, numbered from `completed + 1`; returns how many.
/// The sink grows once for the run's lines (at most one verdict and, mostly, one item per line)
/// rather than doubling, copying and faulting in fresh memory as verdicts arrive.
fn judge_lines(rules: &mut Rules, sink: &mut Sink, check: Option<&dyn Check>, completed: usize, run: &str) -> usize {
    let lines = newlines(run);
    sink.lines.reserve(lines);
    sink.items.reserve(lines);
    let mut count = 0;
    for line in run.split_terminator('\n') {
        count += 1;
        rules.line(sink, check, completed + count, line);
    }
    count
}

/// A part of a run: its text (whole lines), the lines before it in the run, and its own lines.
struct Part<'r> {
    text: &'r str,
    before: usize,
    lines: usize,
}

/// The run cut at line ends into `wanted` parts of about equal size, fewer if they would have too few
/// lines; a single part when the run is too small to share. With `at_record_starts`, a part starts only
/// on a line starting with `{` or `[` (a record, so the part most likely starts at rest): an answer
/// that is one pretty-printed value, whose inner lines are indented, stays one part rather than being
/// judged twice.
fn split(run: &str, wanted: usize, at_record_starts: bool) -> Vec<Part<'_>> {
    let total = newlines(run);
    let count = wanted.min(total / LINES_PER_PART).max(1);
    let mut parts = Vec::with_capacity(count);
    let (mut start, mut before) = (0, 0);
    for index in 1..=count {
        let target = (run.len() / count * index).max(start);
        let end = if index == count {
            run.len()
        } else {
            let after = run.as_bytes().get(target..).unwrap_or_default();
            let starts = |pair: &[u8]| {
                pair.first() == Some(&b'\n')
                    && (!at_record_starts || pair.get(1).is_some_and(|b| matches!(b, b'{' | b'[')))
            };
            after.windows(2).position(starts).map_or(run.len(), |at| target + at + 1)
        };
        let text = run.get(start..end).unwrap_or_default();
        let lines = newlines(text);
        if lines > 0 {
            parts.push(Part { text, before, lines });
        }
        (start, before) = (end, before + lines);
    }
    parts
}

/// The `\n`s in `text`, counted in blocks of 255 bytes so that the compiler can count 32 at a time.
fn newlines(text: &str) -> usize {
    text.as_bytes()
        .chunks(255)
        .map(|block| usize::from(block.iter().map(|byte| u8::from(*byte == b'\n')).sum::<u8>()))
        .sum()
}

/// The cores this process may use (asked once; `TB_NO_PARALLEL` set means one).
pub fn cores() -> usize {
    static CORES: OnceLock<usize> = OnceLock::new();
    *CORES.get_or_init(|| {
        if std::env::var_os("TB_NO_PARALLEL").is_some() {
            1
        } else {
            std::thread::available_parallelism().map_or(1, usize::from)
        }
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::JsonlParser;
    use super::*;
    use crate::output::{OutputParser, Profile};

    /// A run whose records are compact and pretty-printed, so parts start both at rest and inside one.
    fn run(records: usize) -> String {
        (0..records)
            .map(|i| match i % 5 {
                0 => format!("{{\n  \"n\": {i},\n{}  \"end\": 0\n}}\n", "  \"x\": [1],\n".repeat(20)),
                1 => "```json\nprose [x]\n\n{\"z\": 1}```\n".to_owned(),
                _ => format!("{}\n", json!({"type": "definition", "n": i, "s": "é\"x"})),
            })
            .collect()
    }

    #[test]
    fn parts_cut_at_line_ends_and_count_every_line() {
        let text = run(3000);
        for (wanted, at_record_starts) in [(1, false), (2, true), (3, false), (8, true)] {
            let parts = split(&text, wanted, at_record_starts);
            assert_eq!(parts.iter().map(|p| p.text).collect::<String>(), text);
            assert!(parts.iter().all(|p| p.text.ends_with('\n') && p.lines == newlines(p.text)));
            assert_eq!(parts.len(), wanted.min(newlines(&text) / LINES_PER_PART), "{wanted}");
        }
        assert_eq!(split(&run(10), 2, false).len(), 1);
        let pretty = serde_json::to_string_pretty(&vec![json!({"a": [1, 2], "b": "x"}); 3000]).unwrap();
        assert_eq!(split(&pretty, 4, true).len(), 1, "one pretty-printed value stays whole");
        assert_eq!(split(&pretty, 4, false).len(), 4);
    }

    #[test]
    fn parts_judged_at_once_give_the_verdicts_of_one_line_after_another() {
        let (mut taken, mut redone) = (0, 0);
        for records in [1000, 1001, 1002, 1003] {
            let text = run(records);
            for profile in [Profile::Lenient, Profile::Strict, Profile::Trustgraph] {
                for (wanted, threads) in [(2, 2), (3, 2), (3, 1), (3, 3)] {
                    let mut sequential = JsonlParser::new(profile, None);
                    for line in text.split_inclusive('\n') {
                        sequential.feed(line);
                    }
                    let mut shared = JsonlParser::new(profile, None);
                    let parts = split(&text, wanted, false);
                    let (lines, again) = judge_parts(&mut shared.rules, &mut shared.sink, None, 0, &parts, threads);
                    shared.completed = lines;
                    (taken, redone) = (taken + parts.len() - 1 - again, redone + again);
                    assert_eq!(lines, newlines(&text));
                    assert_eq!(shared.lines(), sequential.lines(), "{profile:?} {wanted} {records}");
                    assert_eq!(shared.items(), sequential.items());
                    assert_eq!(shared.report(), sequential.report());
                }
            }
        }
        assert!(taken > 0 && redone > 0, "both ways: {taken} parts taken, {redone} judged again");
    }
}
