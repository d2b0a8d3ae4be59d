//! The interleaved weights stored on disk: mapped and read in place, they run the model to the same tokens and
//! probabilities, bit for bit, as weights rebuilt from the GGUF; a damaged file is rebuilt (and written
//! again), never trusted. A prompt warmed in advance answers as a cold one does.

use tunebench::engine::model::WeightsFrom;
use tunebench::provider::local::{Engine, LoadOptions};
use tunebench::provider::{Event, Request, Usage};

use super::support::{gguf_with, jsonl_request, model_file};

/// The tokens and every event (text, probabilities, usage) of `request` from an empty cache.
fn answer(engine: &mut Engine, request: &Request) -> String {
    engine.forget_cache();
    let (text, cached) = answer_as_it_is(engine, request);
    assert_eq!(cached, 0, "from an empty cache nothing is cached");
    text
}

/// The tokens and every event of `request` from the cache as it is, the usage's cached input tokens
/// taken out (a warm answer differs from the cold one in that count alone), and that count.
fn answer_as_it_is(engine: &mut Engine, request: &Request) -> (String, u64) {
    let (mut events, mut cached) = (Vec::new(), None);
    let generated = engine.generate(request, &mut |e| {
        if let Event::Usage(usage) = &e {
            cached = Some(usage.cached_input_tokens);
        }
        let e = match e {
            Event::Usage(usage) => Event::Usage(Usage { cached_input_tokens: 0, ..usage }),
            e => e,
        };
        events.push(format!("{e:?}"));
        true
    });
    let tokens = generated.unwrap().tokens;
    (format!("{tokens:?} {events:?}"), cached.expect("the usage is reported"))
}

#[test]
fn stored_weights_run_as_rebuilt_ones_and_a_damaged_file_is_rebuilt() {
    let dir = tempfile::tempdir().unwrap();
    let options = LoadOptions { stored_weights: Some(dir.path().to_path_buf()), threads: 1, ..LoadOptions::default() };
    let request = Request::new("").user("Name three colours and say why the sky is blue.").max_tokens(12);
    let mut rebuilt = Engine::load(&model_file(), &options).unwrap();
    assert!(matches!(rebuilt.weights_from(), WeightsFrom::Gguf(_)), "nothing stored yet");
    let want = answer(&mut rebuilt, &request);
    drop(rebuilt);
    let stored: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().path()).collect();
    let [file] = stored.as_slice() else { panic!("one stored file: {stored:?}") };

    let mut read_back = Engine::load(&model_file(), &options).unwrap();
    // Every matrix is read in place from the mapped file (SmolLM2's are all blocks; its output is its embeddings).
    assert_eq!(read_back.weights_from(), WeightsFrom::Mapped { bytes: read_back.weight_bytes() });
    assert_eq!(answer(&mut read_back, &request), want, "stored weights: the same bits");
    drop(read_back);

    let mut bytes = std::fs::read(file).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0x01;
    std::fs::write(file, &bytes).unwrap();
    let mut damaged = Engine::load(&model_file(), &options).unwrap();
    let WeightsFrom::Gguf(why) = damaged.weights_from() else { panic!("a damaged file was trusted") };
    assert!(why.contains("damaged"), "{why}");
    assert_eq!(answer(&mut damaged, &request), want, "rebuilt from the GGUF");
    drop(damaged);
    let again = Engine::load(&model_file(), &options).unwrap();
    assert_eq!(again.weights_from(), WeightsFrom::Mapped { bytes: again.weight_bytes() }, "written again whole");
}

#[test]
fn a_warmed_prompt_answers_as_a_cold_one() {
    let options = LoadOptions { stored_weights: None, threads: 2, ..LoadOptions::default() };
    let mut engine = Engine::load(&model_file(), &options).unwrap();
    // A prompt of a few blocks (the schema's instructions and a long text), constrained line by line.
    let mut request = jsonl_request(40);
    let text = "Mitochondria are organelles that produce most of a cell's chemical energy. ".repeat(12);
    request.messages.last_mut().unwrap().content.push_str(&text);
    let cold = answer(&mut engine, &request);
    engine.forget_cache();
    let prompt_tokens = engine.warm(&request).unwrap();
    assert_eq!(engine.cached_tokens(), prompt_tokens, "the whole prompt is cached");
    let (warm, cached) = answer_as_it_is(&mut engine, &request);
    let reused = engine.last_prompt().unwrap().reused_tokens as u64;
    assert!(reused > 0 && reused < prompt_tokens as u64, "{reused} reused");
    assert_eq!(cached, reused, "the usage counts the reused tokens as cached");
    assert_eq!(warm, cold, "warmed: the same tokens and probabilities");
}

/// The next case: the cache holds another case's prompt, and only the tokens from the first one that
/// differs run (not whole blocks of 64); the answer is the cold one, bit for bit, on one and two threads.
#[test]
fn the_next_case_runs_only_from_its_first_changed_token_and_answers_as_a_cold_one() {
    let options = LoadOptions { stored_weights: None, threads: 2, ..LoadOptions::default() };
    let mut engine = Engine::load(&model_file(), &options).unwrap();
    let case = |text: &str| {
        let mut request = jsonl_request(24);
        let last = request.messages.last_mut().unwrap();
        last.content.push_str(&" Cells are the basic units of life.".repeat(6));
        last.content.push_str(text);
        request
    };
    let (first, next) = (case(" Mitochondria produce energy."), case(" Chloroplasts capture light."));
    for threads in [1, 2] {
        engine.set_threads(threads).unwrap();
        let cold = answer(&mut engine, &next);
        answer(&mut engine, &first);
        let (warm, cached) = answer_as_it_is(&mut engine, &next);
        let shared = {
            let encode = |r: &Request| engine.tokenizer().encode(&engine.prompt_text(r).unwrap()).unwrap();
            let (a, b) = (encode(&first), encode(&next));
            a.iter().zip(&b).take_while(|(x, y)| x == y).count()
        };
        assert_eq!(cached, shared as u64, "{threads} threads: every shared token reused (and counted cached)");
        assert!(shared % 64 != 0 && shared > 64, "a prefix that is not whole blocks: {shared} tokens");
        assert_eq!(warm, cold, "{threads} threads: the cold answer");
    }
}

/// The tiny qwen3 fixture (`qwen3-Q4_K_M.gguf`, K-quant blocks, so a load stores its weights) with one
/// metadata key set to `value`, written in `dir`.
fn qwen3_with(dir: &std::path::Path, key: &str, value: candle_core::quantized::gguf_file::Value) -> std::path::PathBuf {
    let path = dir.join(format!("qwen3-{}.gguf", key.replace('.', "-")));
    gguf_with("qwen3-Q4_K_M.gguf", key, value, &path);
    path
}

/// The vocabulary is built while the weights load: a file whose vocabulary this build does not read is
/// refused, naming it, before any weight is read (nothing stored); one whose vocabulary is broken
/// further in is refused naming the vocabulary's key, as when the vocabulary was built first.
#[test]
fn a_vocabulary_this_build_does_not_read_is_refused_before_the_weights() {
    use candle_core::quantized::gguf_file::Value;
    let dir = tempfile::tempdir().unwrap();
    let weights = dir.path().join("weights");
    let options = LoadOptions { stored_weights: Some(weights.clone()), threads: 1, ..LoadOptions::default() };
    let stored = || std::fs::read_dir(&weights).map_or(0, |d| d.count());
    for (key, value, named) in [
        ("tokenizer.ggml.pre", Value::String("falcon".into()), "\"falcon\""),
        ("tokenizer.ggml.model", Value::String("bert".into()), "\"bert\""),
    ] {
        let error = Engine::load(&qwen3_with(dir.path(), key, value), &options).unwrap_err().to_string();
        assert!(error.contains(key) && error.contains(named), "{error}");
        assert_eq!(stored(), 0, "{key}: no weights read, none stored");
    }
    let broken = qwen3_with(dir.path(), "tokenizer.ggml.scores", Value::Array(vec![Value::F32(0.0)]));
    let error = Engine::load(&broken, &options).unwrap_err().to_string();
    assert!(error.contains("tokenizer.ggml.scores") && error.contains("1 entries"), "{error}");
}
