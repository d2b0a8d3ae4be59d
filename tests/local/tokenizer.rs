//! The tokenizer built from the GGUF's vocabulary round-trips text and reads the `smollm`
//! pre-tokenizer's rules on the default model, and gives llama.cpp's ids on every family's tiny
//! vocabulary (`tests/fixtures/families/tokenize.json`).

use super::support::local;

#[test]
fn text_round_trips_through_the_tokenizer() {
    local().with_engine(|engine| {
        let tokenizer = engine.tokenizer();
        let texts = [
            "Hello, world! 12345 apples cost $3.50 (2024-06-01).",
            "日本語のテキストと中文字符，还有한국어.",
            "Emoji: 🙂👍🏽 🧬 and a ZWJ family 👨‍👩‍👧.",
            "<|im_start|>user\nHi there<|im_end|>\n<|im_start|>assistant\n",
            "  leading spaces, tabs\tand\r\nnewlines\n\n   trailing   ",
            "{\"type\":\"definition\",\"entity\":\"DNA\",\"n\":42}",
        ];
        for text in texts {
            let ids = tokenizer.encode(text).unwrap();
            assert!(!ids.is_empty(), "{text:?}");
            assert_eq!(tokenizer.decode(&ids), text, "round trip of {text:?} via {ids:?}");
            let plain = tokenizer.encode_plain(text).unwrap();
            assert_eq!(tokenizer.decode(&plain), text, "plain round trip of {text:?}");
        }
    });
}

#[test]
fn digits_split_one_by_one_with_no_prefix_space_and_specials_kept_whole() {
    local().with_engine(|engine| {
        let tokenizer = engine.tokenizer();
        let digits = tokenizer.encode("2024").unwrap();
        assert_eq!(digits.len(), 4, "{digits:?}");
        for (id, digit) in digits.iter().zip(["2", "0", "2", "4"]) {
            assert_eq!(tokenizer.decode(&[*id]), digit);
        }
        let hello = tokenizer.encode("Hello").unwrap();
        assert_eq!(hello.len(), 1, "no space is added before the first word: {hello:?}");
        assert_eq!(tokenizer.decode(&hello), "Hello");
        let chat = tokenizer.encode("<|im_start|>user<|im_end|>").unwrap();
        assert_eq!(chat.first(), tokenizer.special_id("<|im_start|>").as_ref());
        assert_eq!(chat.last(), Some(&tokenizer.eos));
        assert!(tokenizer.is_special(tokenizer.eos));
        let plain = tokenizer.encode_plain("<|im_end|>").unwrap();
        assert!(
            plain.len() > 1 && !plain.contains(&tokenizer.eos),
            "as plain text it is not a control token: {plain:?}"
        );
        // " world" is one token with its space (GPT-2 word splits).
        assert_eq!(tokenizer.encode("Hello world").unwrap().len(), 2);
    });
}

/// The tokenizer of the GGUF at `path`.
pub fn tokenizer_of(path: &std::path::Path) -> tunebench::engine::tokenizer::TextTokenizer {
    let mut file = std::io::BufReader::new(
        std::fs::File::open(path).unwrap_or_else(|e| panic!("cannot open {}: {e}", path.display())),
    );
    let content = candle_core::quantized::gguf_file::Content::read(&mut file)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    tunebench::engine::tokenizer::TextTokenizer::from_gguf(&content)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Every string of `tokenize.json` (5 with special tokens, both special modes, and llama.cpp's 46 test
/// strings) gives llama.cpp's ids with each family's tiny vocabulary: `smollm`, `llama-bpe` and `qwen2`
/// byte-level BPE, and Gemma's SentencePiece with byte fallback.
#[test]
fn every_family_vocabulary_tokenizes_as_llama_cpp_does() {
    let folder = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/families");
    let fixture: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(folder.join("tokenize.json")).unwrap()).unwrap();
    let mut checked = 0;
    let mut wrong = Vec::new();
    for (family, entry) in fixture["families"].as_object().unwrap() {
        let tokenizer = tokenizer_of(&folder.join(entry["gguf"].as_str().unwrap()));
        for case in entry["cases"].as_array().unwrap() {
            let text = case["text"].as_str().unwrap();
            let (add, parse) = (case["add_special"].as_bool().unwrap(), case["parse_special"].as_bool().unwrap());
            let expected: Vec<u32> =
                case["ids"].as_array().unwrap().iter().map(|i| i.as_u64().unwrap() as u32).collect();
            let ours = tokenizer.tokenize(text, add, parse).unwrap();
            if ours != expected {
                wrong.push(format!("{family} {text:?} (special {add}): ours {ours:?}, llama.cpp {expected:?}"));
            }
            if !add && !parse {
                // The tokens spell the text back, byte for byte.
                assert_eq!(tokenizer.decode(&ours), text, "{family}: round trip of {text:?}");
            }
            checked += 1;
        }
    }
    assert_eq!(checked, 5 * 56, "every family's 56 cases");
    assert!(wrong.is_empty(), "{} of {checked} differ:\n{}", wrong.len(), wrong.join("\n"));
}

fn family_content(family: &str) -> candle_core::quantized::gguf_file::Content {
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("tests/fixtures/families/{family}-F32.gguf"));
    let mut file = std::io::BufReader::new(std::fs::File::open(&path).unwrap());
    candle_core::quantized::gguf_file::Content::read(&mut file).unwrap()
}

/// A prompt gets BOS when the file says so, once: a template that writes BOS itself (Llama 3, Gemma 3)
/// does not get a second one; a file that says no (SmolLM2, Qwen) gets none.
#[test]
fn bos_is_added_as_the_file_says_and_never_doubled() {
    use tunebench::engine::tokenizer::TextTokenizer;
    for (family, bos, prompt) in [
        ("llama3", Some("<|begin_of_text|>"), "<|start_header_id|>user<|end_header_id|>\n\nhi<|eot_id|>"),
        ("gemma3", Some("<bos>"), "<start_of_turn>user\nhello<end_of_turn>\n<start_of_turn>model\n"),
        ("qwen2", None, "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"),
        ("smollm2", None, "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"),
    ] {
        let tokenizer = TextTokenizer::from_gguf(&family_content(family)).unwrap();
        let plain = tokenizer.tokenize(prompt, false, true).unwrap();
        let bos_id = bos.map(|b| tokenizer.token_id(b).unwrap());
        let expected: Vec<u32> = bos_id.into_iter().chain(plain.iter().copied()).collect();
        assert_eq!(tokenizer.encode(prompt).unwrap(), expected, "{family}: BOS added as the file says");
        let written = format!("{}{prompt}", bos.unwrap_or(""));
        assert_eq!(tokenizer.encode(&written).unwrap(), expected, "{family}: the template's own BOS, once");
    }
    // Gemma ends its turn with <end_of_turn>, not with the file's EOS <eos>: both end a generation.
    let gemma = TextTokenizer::from_gguf(&family_content("gemma3")).unwrap();
    let end_of_turn = gemma.token_id("<end_of_turn>").unwrap();
    assert_eq!(gemma.end_of_turn, end_of_turn);
    assert!(gemma.ends_generation(end_of_turn) && gemma.ends_generation(gemma.eos));
    assert!(!gemma.ends_generation(gemma.token_id("<start_of_turn>").unwrap()));
}

/// A vocabulary this build does not read is refused with the value and what does run.
#[test]
fn unsupported_vocabularies_are_named() {
    use candle_core::quantized::gguf_file::Value;
    use tunebench::engine::tokenizer::TextTokenizer;
    let mut content = family_content("qwen2");
    content.metadata.insert("tokenizer.ggml.pre".into(), Value::String("falcon".into()));
    let error = TextTokenizer::from_gguf(&content).unwrap_err().to_string();
    assert!(error.contains("\"falcon\"") && error.contains("\"qwen2\"") && error.contains("\"llama-bpe\""), "{error}");
    content.metadata.insert("tokenizer.ggml.model".into(), Value::String("bert".into()));
    let error = TextTokenizer::from_gguf(&content).unwrap_err().to_string();
    assert!(error.contains("\"bert\"") && error.contains("\"gpt2\"") && error.contains("\"llama\""), "{error}");
    let mut content = family_content("gemma3");
    content.metadata.insert("tokenizer.ggml.scores".into(), Value::Array(vec![Value::F32(0.0)]));
    let error = TextTokenizer::from_gguf(&content).unwrap_err().to_string();
    assert!(error.contains("tokenizer.ggml.scores") && error.contains("1 entries"), "{error}");
}
