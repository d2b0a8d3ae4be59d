//! The tokenizer built from the GGUF's vocabulary and merges round-trips text and reads the `smollm`
//! pre-tokenizer's rules.

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
