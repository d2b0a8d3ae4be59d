//! The scanner inside a string: plain runs in bulk, escapes, `\\uXXXX` with surrogate pairs (a lone
//! surrogate reads as U+FFFD; a high surrogate still waiting for its pair is held back, so a cut there
//! drops it like any unfinished escape).

use super::{Esc, Expect, ScanError, Scanner, Sink, Token};

impl Scanner {
    /// Reads string bytes from `chunk[i..]`; returns how many were read (up to the closing quote).
    pub(super) fn string<S: Sink>(&mut self, chunk: &str, start: usize, sink: &mut S) -> usize {
        let bytes = chunk.as_bytes();
        let mut i = start;
        while let Token::Str { key, esc, high } = self.token {
            if esc == Esc::None && high.is_none() {
                let rest = bytes.get(i..).unwrap_or_default();
                let run = rest.iter().position(|&b| b == b'"' || b == b'\\' || b < 0x20).unwrap_or(rest.len());
                if run > 0 {
                    sink.string_part(chunk.get(i..i + run).unwrap_or_default());
                    i += run;
                }
            }
            let Some(&byte) = bytes.get(i) else { break };
            let at = self.pos + (i - start);
            match esc {
                Esc::Backslash => {
                    let decoded = match byte {
                        b'"' => '"',
                        b'\\' => '\\',
                        b'/' => '/',
                        b'b' => '\u{8}',
                        b'f' => '\u{c}',
                        b'n' => '\n',
                        b'r' => '\r',
                        b't' => '\t',
                        b'u' => {
                            self.token = Token::Str { key, esc: Esc::Hex { digits: 0, unit: 0 }, high };
                            i += 1;
                            continue;
                        }
                        _ => {
                            self.error =
                                Some(ScanError { at, message: "invalid escape in string".into(), fatal: false });
                            break;
                        }
                    };
                    if high.is_some() {
                        emit(sink, '\u{fffd}');
                    }
                    emit(sink, decoded);
                    self.token = Token::Str { key, esc: Esc::None, high: None };
                }
                Esc::Hex { digits, unit } => {
                    let Some(digit) = (byte as char).to_digit(16) else {
                        self.error =
                            Some(ScanError { at, message: "invalid \\u escape in string".into(), fatal: false });
                        break;
                    };
                    let unit = unit * 16 + digit;
                    if digits < 3 {
                        self.token = Token::Str { key, esc: Esc::Hex { digits: digits + 1, unit }, high };
                    } else {
                        let high = self.code_unit(high, unit, sink);
                        self.token = Token::Str { key, esc: Esc::None, high };
                    }
                }
                Esc::None => {
                    if high.is_some() {
                        if byte == b'\\' {
                            self.esc_at = at;
                            self.token = Token::Str { key, esc: Esc::Backslash, high };
                            i += 1;
                        } else {
                            emit(sink, '\u{fffd}');
                            self.token = Token::Str { key, esc, high: None };
                        }
                        continue;
                    }
                    match byte {
                        b'"' => {
                            i += 1;
                            self.token = Token::None;
                            sink.string_end();
                            if key {
                                self.expect = Expect::Colon;
                            } else {
                                self.value_done();
                            }
                            break;
                        }
                        b'\\' => {
                            self.esc_at = at;
                            self.token = Token::Str { key, esc: Esc::Backslash, high: None };
                        }
                        _ => {
                            self.error =
                                Some(ScanError { at, message: "control character in string".into(), fatal: false });
                            break;
                        }
                    }
                }
            }
            i += 1;
        }
        i - start
    }

    /// A complete `\uXXXX` code unit; returns the high surrogate still waiting for its pair.
    fn code_unit<S: Sink>(&mut self, high: Option<u32>, unit: u32, sink: &mut S) -> Option<u32> {
        if let Some(high) = high {
            if (0xdc00..=0xdfff).contains(&unit) {
                let code = 0x10000 + ((high - 0xd800) << 10) + (unit - 0xdc00);
                emit(sink, char::from_u32(code).unwrap_or('\u{fffd}'));
                return None;
            }
            emit(sink, '\u{fffd}');
        }
        if (0xd800..=0xdbff).contains(&unit) {
            self.high_at = self.esc_at;
            return Some(unit);
        }
        emit(sink, char::from_u32(unit).unwrap_or('\u{fffd}'));
        None
    }
}

fn emit<S: Sink>(sink: &mut S, c: char) {
    let mut buffer = [0u8; 4];
    sink.string_part(c.encode_utf8(&mut buffer));
}
