//! The PtcRunner signature parser: no panic on any text; an error points inside the text; a
//! signature prints back to itself, maps to JSON Schemas that compile, accepts its own example
//! answer (but for `:keyword`), and reads any answer (after a NUL byte in the input) with JSON mode's rules.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tunebench::prompt::signature::{json_mode, parse, parse_in, Era};
use tunebench::schema::CompiledSchema;

const ERAS: [Era; 4] = [Era::V0, Era::Early, Era::JsonMode, Era::Later];

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let (source, answer) = text.split_once('\0').unwrap_or((&text, ""));
    for era in ERAS {
        let sig = match parse_in(source, era) {
            Ok(sig) => sig,
            Err(error) => {
                assert!(error.offset <= source.len() && error.line >= 1 && error.column >= 1, "{error:?}");
                assert!(error.to_string().contains('^'));
                continue;
            }
        };
        assert_eq!(parse_in(&sig.to_string(), era).as_ref(), Ok(&sig), "printed as {sig}");
        // A repeated field name stays twice in `required`, as PtcRunner's schema has it (SEMANTICS.md
        // §2.2), which JSON Schema's meta-schema rejects; any other signature's schemas compile.
        let repeats = !sig.repeated_fields().is_empty();
        for schema in [sig.output_schema_in(era), sig.input_schema()] {
            if let Err(error) = CompiledSchema::compile(&schema).map_err(|e| format!("{e:?}")) {
                assert!(repeats, "{sig} maps to a schema that does not compile: {schema} ({error})");
            }
        }
        // PtcRunner's example of a `:keyword` is the string "keyword", which its validation rejects
        // (a keyword must be an Elixir atom; SEMANTICS.md §2.5), and a repeated field's example has
        // the last type only, so those are left out.
        let example = json_mode::example_value(&sig.returns);
        if !repeats && !sig.to_string().contains(":keyword") {
            assert!(sig.validate(&example).is_ok(), "{sig} rejects its own example {example}");
        }
        if let Err(error) = json_mode::accept(&sig, answer) {
            let _ = json_mode::feedback(&sig, answer, &error);
        }
    }
    let _ = parse(source);
});
