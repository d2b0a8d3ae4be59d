//! GGUF headers written here byte by byte: one that checks out reads as candle reads it, and hostile
//! ones (an alignment of 0 or not a power of two, tensor dimensions whose product wraps to 0, a zero
//! dimension beside a huge one, a tensor past the end of the file) are errors naming the field, from
//! `tunebench model info` and from the engine's load alike: no panic, no spin, no huge allocation.

use std::path::Path;

use candle_core::quantized::gguf_file::{Content, Value};
use tunebench::engine::gguf;
use tunebench::provider::local::{Engine, LoadOptions};

use super::support::model_file;

/// A tensor's entry in the header: name, dimensions (GGUF order), type number, offset.
type Entry<'a> = (&'a str, Vec<u64>, u32, u64);

const F32: u32 = 0;
const Q4_1: u32 = 3;

fn put_str(out: &mut Vec<u8>, text: &str) {
    out.extend((text.len() as u64).to_le_bytes());
    out.extend(text.as_bytes());
}

fn type_of(value: &Value) -> u32 {
    match value {
        Value::U8(_) => 0,
        Value::I8(_) => 1,
        Value::U16(_) => 2,
        Value::I16(_) => 3,
        Value::U32(_) => 4,
        Value::I32(_) => 5,
        Value::F32(_) => 6,
        Value::Bool(_) => 7,
        Value::String(_) => 8,
        Value::Array(_) => 9,
        Value::U64(_) => 10,
        Value::I64(_) => 11,
        Value::F64(_) => 12,
    }
}

fn put_value(out: &mut Vec<u8>, value: &Value) {
    match value {
        Value::U8(v) => out.push(*v),
        Value::I8(v) => out.extend(v.to_le_bytes()),
        Value::U16(v) => out.extend(v.to_le_bytes()),
        Value::I16(v) => out.extend(v.to_le_bytes()),
        Value::U32(v) => out.extend(v.to_le_bytes()),
        Value::I32(v) => out.extend(v.to_le_bytes()),
        Value::F32(v) => out.extend(v.to_le_bytes()),
        Value::Bool(v) => out.push(u8::from(*v)),
        Value::String(v) => put_str(out, v),
        Value::Array(items) => {
            out.extend(items.first().map_or(4, type_of).to_le_bytes());
            out.extend((items.len() as u64).to_le_bytes());
            items.iter().for_each(|item| put_value(out, item));
        }
        Value::U64(v) => out.extend(v.to_le_bytes()),
        Value::I64(v) => out.extend(v.to_le_bytes()),
        Value::F64(v) => out.extend(v.to_le_bytes()),
    }
}

/// A GGUF (version 3): `metadata`, `tensors`, then `data` after the header padded to `pad`.
fn gguf(metadata: &[(String, Value)], tensors: &[Entry], pad: usize, data: &[u8]) -> Vec<u8> {
    let mut out = b"GGUF".to_vec();
    out.extend(3u32.to_le_bytes());
    out.extend((tensors.len() as u64).to_le_bytes());
    out.extend((metadata.len() as u64).to_le_bytes());
    for (key, value) in metadata {
        put_str(&mut out, key);
        out.extend(type_of(value).to_le_bytes());
        put_value(&mut out, value);
    }
    for (name, dims, dtype, offset) in tensors {
        put_str(&mut out, name);
        out.extend((dims.len() as u32).to_le_bytes());
        dims.iter().for_each(|d| out.extend(d.to_le_bytes()));
        out.extend(dtype.to_le_bytes());
        out.extend(offset.to_le_bytes());
    }
    out.resize(out.len().next_multiple_of(pad), 0);
    out.extend(data);
    out
}

fn alignment(value: Value) -> Vec<(String, Value)> {
    vec![("general.name".into(), Value::String("hostile".into())), ("general.alignment".into(), value)]
}

/// `tunebench model info --model FILE` on `bytes`: exit code and stderr.
fn model_info(dir: &Path, name: &str, bytes: &[u8]) -> (Option<i32>, String) {
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap();
    let output = std::process::Command::new(assert_cmd::cargo::cargo_bin("tunebench"))
        .args(["model", "info", "--model"])
        .arg(&path)
        .output()
        .unwrap();
    (output.status.code(), String::from_utf8_lossy(&output.stderr).into_owned())
}

#[test]
fn hostile_gguf_headers_are_refused_naming_the_field() {
    let dir = tempfile::tempdir().unwrap();
    let four = [("w", vec![4], F32, 0)];
    let data = [0u8; 16];
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        ("alignment-0.gguf", gguf(&alignment(Value::U32(0)), &four, 32, &data), "`general.alignment` is U32(0)"),
        ("alignment-48.gguf", gguf(&alignment(Value::U32(48)), &four, 48, &data), "must be a power of two"),
        ("alignment-huge.gguf", gguf(&alignment(Value::U32(1 << 31)), &four, 32, &data), "from 1 to 1048576"),
        (
            "wrapping-dims.gguf",
            gguf(&alignment(Value::U32(32)), &[("w", vec![1 << 32, 1 << 32], F32, 0)], 32, &data),
            "tensor `w` has dimensions [4294967296, 4294967296]: their product is too large",
        ),
        (
            "zero-dim.gguf",
            gguf(&alignment(Value::U32(32)), &[("w", vec![0, 1 << 40], Q4_1, 0)], 32, &data),
            "tensor `w` has dimensions [0, 1099511627776]: a dimension of 0 holds nothing",
        ),
        (
            "past-the-end.gguf",
            gguf(&alignment(Value::U32(32)), &[("w", vec![8], F32, 0)], 32, &data),
            "tensor `w` ([8] F32) at offset 0 does not fit in the file",
        ),
    ];
    // What held before stays held: a wrong magic, a cut file, absurd counts and lengths.
    let good = gguf(&alignment(Value::U32(32)), &four, 32, &data);
    let mut magic = good.clone();
    magic[..4].copy_from_slice(b"GGML");
    let mut tensor_count = good.clone();
    tensor_count[8..16].copy_from_slice(&u64::MAX.to_le_bytes());
    let mut key_length = good.clone();
    key_length[24..32].copy_from_slice(&(1u64 << 40).to_le_bytes());
    let array = [("tokens".to_string(), Value::Array(vec![Value::U32(7)]))];
    let mut array_length = gguf(&array, &[], 32, &[]);
    let at = 24 + 8 + "tokens".len() + 4 + 4;
    array_length[at..at + 8].copy_from_slice(&(1u64 << 60).to_le_bytes());
    let more: Vec<(&str, Vec<u8>, &str)> = vec![
        ("magic.gguf", magic, "not the GGUF magic"),
        ("cut.gguf", good[..50].to_vec(), "`general.name`: the file ends at byte 50, inside 8 bytes from byte 48"),
        ("tensor-count.gguf", tensor_count, "a tensor count of 18446744073709551615 at byte 8 is more than"),
        ("key-length.gguf", key_length, "a metadata key: a length of 1099511627776 at byte 24 is more than"),
        ("array-length.gguf", array_length, "`tokens`: an array length of 1152921504606846976 at byte 46 is more"),
    ];
    for (name, bytes, says) in cases.into_iter().chain(more) {
        let (code, stderr) = model_info(dir.path(), name, &bytes);
        assert_eq!(code, Some(2), "{name}: {stderr}");
        assert!(stderr.contains(name) && stderr.contains("is not a readable GGUF file"), "{name}: {stderr}");
        assert!(stderr.contains(says), "{name}: {stderr}");
    }
}

#[test]
fn a_header_that_checks_out_reads_as_candle_reads_it() {
    let values: Vec<u8> = [1.5f32, -2.0, 0.25, 8.0].iter().flat_map(|v| v.to_le_bytes()).collect();
    let mut metadata = alignment(Value::U32(64));
    metadata.push(("tokens".into(), Value::Array(vec![Value::String("a".into()), Value::String("b\0".into())])));
    metadata.push(("nested".into(), Value::Array(vec![Value::Array(vec![Value::I64(-1)]), Value::Array(vec![])])));
    let bytes = gguf(&metadata, &[("w", vec![4], F32, 0)], 64, &values);
    let ours = gguf::read(&mut std::io::Cursor::new(&bytes)).unwrap();
    let candle = Content::read(&mut std::io::Cursor::new(&bytes)).unwrap();
    // The data starts at the header's end rounded up to 64.
    assert_eq!(ours.tensor_data_offset, bytes.len() as u64 - 16);
    assert_eq!(ours.tensor_data_offset % 64, 0);
    assert_eq!(ours.tensor_data_offset, candle.tensor_data_offset);
    assert_eq!(format!("{:?}", sorted(&ours)), format!("{:?}", sorted(&candle)));
    let tensor = ours.tensor(&mut std::io::Cursor::new(&bytes), "w", &candle_core::Device::Cpu).unwrap();
    let read: Vec<f32> = tensor.dequantize(&candle_core::Device::Cpu).unwrap().to_vec1().unwrap();
    assert_eq!(read, [1.5, -2.0, 0.25, 8.0]);
}

/// The metadata and tensor table, in key order (for comparing two readings).
fn sorted(content: &Content) -> (Vec<String>, Vec<String>) {
    let mut metadata: Vec<_> = content.metadata.iter().map(|(k, v)| format!("{k} = {v:?}")).collect();
    let mut tensors: Vec<_> = content.tensor_infos.iter().map(|(k, v)| format!("{k} = {v:?}")).collect();
    metadata.sort();
    tensors.sort();
    (metadata, tensors)
}

/// The default model's metadata (its tokenizer, chat template and shape) over one tensor whose
/// dimensions multiply to 2^64: the engine refuses it before reading any weight.
#[test]
fn a_model_whose_tensor_sizes_wrap_is_refused_by_the_engine() {
    let real = {
        let mut reader = std::io::BufReader::new(std::fs::File::open(model_file()).unwrap());
        Content::read(&mut reader).unwrap()
    };
    let metadata: Vec<(String, Value)> = real.metadata.into_iter().collect();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("wrapped.gguf");
    let tensors = [("blk.0.attn_q.weight", vec![1 << 32, 1 << 32], Q4_1, 0)];
    std::fs::write(&path, gguf(&metadata, &tensors, 32, &[0u8; 64])).unwrap();
    let options = LoadOptions { stored_weights: None, threads: 1, ..LoadOptions::default() };
    let error = Engine::load(&path, &options).unwrap_err().to_string();
    assert!(error.contains("wrapped.gguf is not a readable GGUF file"), "{error}");
    assert!(error.contains("tensor `blk.0.attn_q.weight` has dimensions"), "{error}");

    // A layer count no file could back is refused before anything is allocated for it.
    let mut metadata = metadata;
    for (key, value) in &mut metadata {
        if key == "llama.block_count" {
            *value = Value::U32(u32::MAX);
        }
    }
    let tensors = [("blk.0.attn_q.weight", vec![576, 576], F32, 0)];
    std::fs::write(&path, gguf(&metadata, &tensors, 32, &vec![0u8; 576 * 576 * 4])).unwrap();
    let error = Engine::load(&path, &options).unwrap_err().to_string();
    assert!(error.contains("`llama.block_count` is 4294967295, more layers than the file has tensors (1)"), "{error}");
}
