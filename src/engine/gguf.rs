//! Reading a GGUF file's header (metadata and tensor table) into candle's `Content`, every size
//! checked first: counts, string and array lengths, tensor dimensions and data ranges are checked
//! with checked arithmetic against the file's length before anything is allocated or divided, and the
//! alignment must be a power of two up to [`MAX_ALIGNMENT`]. A hostile file is an error naming the
//! field at fault, never a panic, a loop over a wrapped size, or an allocation the file cannot back.
//! Every reader of a GGUF (the engine, `tunebench model info`, prompt token counts) opens it here.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufReader, Read, Seek, SeekFrom};
use std::path::Path;

use candle_core::quantized::gguf_file::{Content, TensorInfo, Value, VersionedMagic};
use candle_core::quantized::GgmlDType;

use super::EngineError;

/// The largest `general.alignment` accepted (the format's default is 32).
pub const MAX_ALIGNMENT: u64 = 1 << 20;
/// The alignment when the file names none.
const DEFAULT_ALIGNMENT: u64 = 32;
/// Dimensions of a tensor, at most (as ggml).
const MAX_DIMS: u32 = 4;
/// Arrays nested in arrays, at most.
const MAX_DEPTH: usize = 16;
/// Metadata values in all, array elements included: a header of 4 bytes per value could otherwise
/// make tens of bytes of memory per byte of file (a real tokenizer has a few hundred thousand).
pub const MAX_VALUES: u64 = 1 << 24;

/// Opens the GGUF at `path` and reads its header; the reader is left ready for the tensors' data.
pub fn open(path: &Path) -> Result<(Content, BufReader<File>), EngineError> {
    // Through the bounded reader's open: a regular file, opened without blocking (a FIFO is refused).
    let (file, _) = crate::files::open(path, crate::files::GGUF)
        .map_err(|e| EngineError::Model(format!("cannot open the model: {e}")))?;
    let mut reader = BufReader::new(file);
    let content = read(&mut reader)
        .map_err(|e| EngineError::Model(format!("{} is not a readable GGUF file: {e}", path.display())))?;
    Ok((content, reader))
}

/// Reads a GGUF header from the start of `reader`; the error says what is wrong and where.
pub fn read<R: Read + Seek>(reader: &mut R) -> Result<Content, String> {
    let len = reader.seek(SeekFrom::End(0)).map_err(|e| format!("cannot find its length: {e}"))?;
    reader.seek(SeekFrom::Start(0)).map_err(|e| format!("cannot read it: {e}"))?;
    let mut header = Header { reader, len, at: 0, v1: false, values: 0 };
    let magic = header.bytes::<4>().map_err(|e| format!("the magic: {e}"))?;
    if &magic != b"GGUF" {
        return Err(format!("it starts with {magic:02x?}, not the GGUF magic"));
    }
    let magic = match header.u32().map_err(|e| format!("the version: {e}"))? {
        1 => VersionedMagic::GgufV1,
        2 => VersionedMagic::GgufV2,
        3 => VersionedMagic::GgufV3,
        other => return Err(format!("GGUF version {other} is not one this build reads (1 to 3)")),
    };
    header.v1 = matches!(magic, VersionedMagic::GgufV1);
    let tensors = header.count(header.prefix() + 4 + 4 + 8, "a tensor count")?;
    let entries = header.count(header.prefix() + 4 + 1, "a metadata count")?;
    let mut metadata = HashMap::new();
    for _ in 0..entries {
        let key = header.string().map_err(|e| format!("a metadata key: {e}"))?;
        let value = header.u32().and_then(|kind| header.value(kind, 0)).map_err(|e| format!("`{key}`: {e}"))?;
        metadata.insert(key, value);
    }
    let mut table = Vec::new();
    for _ in 0..tensors {
        let name = header.string().map_err(|e| format!("a tensor name: {e}"))?;
        let entry = header.tensor().map_err(|e| format!("tensor `{name}`: {e}"))?;
        table.push((name, entry));
    }
    let alignment = alignment(&metadata)?;
    let data_start = header
        .at
        .checked_next_multiple_of(alignment)
        .filter(|&start| start <= len)
        .ok_or_else(|| format!("the tensor data would start past the end of the file ({len} bytes)"))?;
    let mut tensor_infos = HashMap::new();
    for (name, (mut dims, dtype, offset)) in table {
        check_tensor(&name, &dims, dtype, offset, data_start, len)?;
        // GGUF lists the fastest-moving dimension first; candle's shapes the other way round.
        dims.reverse();
        let dims = dims.into_iter().map(|d| usize::try_from(d).unwrap_or(usize::MAX)).collect::<Vec<_>>();
        tensor_infos.insert(name, TensorInfo { ggml_dtype: dtype, shape: dims.into(), offset });
    }
    Ok(Content { magic, metadata, tensor_infos, tensor_data_offset: data_start })
}

/// `general.alignment`: a power of two up to [`MAX_ALIGNMENT`], 32 when absent.
fn alignment(metadata: &HashMap<String, Value>) -> Result<u64, String> {
    let Some(value) = metadata.get("general.alignment") else { return Ok(DEFAULT_ALIGNMENT) };
    match unsigned(value) {
        Some(n) if n.is_power_of_two() && n <= MAX_ALIGNMENT => Ok(n),
        _ => Err(format!("`general.alignment` is {value:?}: it must be a power of two from 1 to {MAX_ALIGNMENT}")),
    }
}

/// A key's value as a whole number of 0 or more, whatever integer type the file wrote it in.
pub fn unsigned(value: &Value) -> Option<u64> {
    match value {
        Value::U8(v) => Some(u64::from(*v)),
        Value::U16(v) => Some(u64::from(*v)),
        Value::U32(v) => Some(u64::from(*v)),
        Value::U64(v) => Some(*v),
        Value::I8(v) => u64::try_from(*v).ok(),
        Value::I16(v) => u64::try_from(*v).ok(),
        Value::I32(v) => u64::try_from(*v).ok(),
        Value::I64(v) => u64::try_from(*v).ok(),
        _ => None,
    }
}

/// A tensor's elements (every dimension at least 1, their product in range), whole blocks of its
/// type, and its bytes inside the file.
fn check_tensor(
    name: &str,
    dims: &[u64],
    dtype: GgmlDType,
    offset: u64,
    data_start: u64,
    len: u64,
) -> Result<(), String> {
    if dims.contains(&0) {
        return Err(format!("tensor `{name}` has dimensions {dims:?}: a dimension of 0 holds nothing"));
    }
    let elements = dims
        .iter()
        .try_fold(1u64, |product, &d| product.checked_mul(d))
        .filter(|&n| usize::try_from(n).is_ok())
        .ok_or_else(|| format!("tensor `{name}` has dimensions {dims:?}: their product is too large to hold"))?;
    let (block, block_bytes) = (dtype.block_size() as u64, dtype.type_size() as u64);
    if elements % block != 0 {
        return Err(format!("tensor `{name}` has {elements} elements, not whole blocks of {block} ({dtype:?})"));
    }
    let bytes = (elements / block).checked_mul(block_bytes);
    let start = data_start.checked_add(offset);
    match (start, bytes) {
        (Some(start), Some(bytes)) if start.checked_add(bytes).is_some_and(|end| end <= len) => Ok(()),
        _ => Err(format!(
            "tensor `{name}` ({dims:?} {dtype:?}) at offset {offset} does not fit in the file ({len} bytes, data from {data_start})"
        )),
    }
}

/// The tensor types candle reads, by their number in the file.
fn dtype_of(number: u32) -> Option<GgmlDType> {
    Some(match number {
        0 => GgmlDType::F32,
        1 => GgmlDType::F16,
        2 => GgmlDType::Q4_0,
        3 => GgmlDType::Q4_1,
        6 => GgmlDType::Q5_0,
        7 => GgmlDType::Q5_1,
        8 => GgmlDType::Q8_0,
        9 => GgmlDType::Q8_1,
        10 => GgmlDType::Q2K,
        11 => GgmlDType::Q3K,
        12 => GgmlDType::Q4K,
        13 => GgmlDType::Q5K,
        14 => GgmlDType::Q6K,
        15 => GgmlDType::Q8K,
        30 => GgmlDType::BF16,
        _ => return None,
    })
}

/// The header being read: where we are, and the file's length every size is checked against.
struct Header<'r, R> {
    reader: &'r mut R,
    len: u64,
    at: u64,
    /// Version 1 writes lengths and counts in 32 bits, later versions in 64.
    v1: bool,
    /// Metadata values read so far.
    values: u64,
}

impl<R: Read> Header<'_, R> {
    fn remaining(&self) -> u64 {
        self.len.saturating_sub(self.at)
    }

    /// Bytes of a length or count.
    fn prefix(&self) -> u64 {
        if self.v1 {
            4
        } else {
            8
        }
    }

    fn bytes<const N: usize>(&mut self) -> Result<[u8; N], String> {
        let mut bytes = [0u8; N];
        if (N as u64) > self.remaining() {
            return Err(format!("the file ends at byte {}, inside {N} bytes from byte {}", self.len, self.at));
        }
        self.reader.read_exact(&mut bytes).map_err(|e| format!("cannot read byte {}: {e}", self.at))?;
        self.at += N as u64;
        Ok(bytes)
    }

    fn u32(&mut self) -> Result<u32, String> {
        self.bytes().map(u32::from_le_bytes)
    }

    fn u64(&mut self) -> Result<u64, String> {
        self.bytes().map(u64::from_le_bytes)
    }

    /// A length or count (32 bits in version 1).
    fn length(&mut self) -> Result<u64, String> {
        if self.v1 {
            self.u32().map(u64::from)
        } else {
            self.u64()
        }
    }

    /// A count (`what`: of what) of things at least `each` bytes long, which the rest of the file
    /// must be able to hold.
    fn count(&mut self, each: u64, what: &str) -> Result<u64, String> {
        let at = self.at;
        let n = self.length()?;
        let room = self.remaining() / each.max(1);
        if n > room {
            return Err(format!("{what} of {n} at byte {at} is more than the rest of the file can hold ({room})"));
        }
        Ok(n)
    }

    fn string(&mut self) -> Result<String, String> {
        let n = self.count(1, "a length")?;
        let mut bytes = vec![0u8; usize::try_from(n).map_err(|_| format!("a length of {n} bytes"))?];
        self.reader.read_exact(&mut bytes).map_err(|e| format!("cannot read byte {}: {e}", self.at))?;
        self.at += n;
        // Strings are not NUL-terminated, but some writers add one.
        while bytes.last() == Some(&0) {
            bytes.pop();
        }
        Ok(String::from_utf8_lossy(&bytes).into_owned())
    }

    /// A tensor's entry after its name: dimensions (at most [`MAX_DIMS`]), type, offset.
    fn tensor(&mut self) -> Result<(Vec<u64>, GgmlDType, u64), String> {
        let n_dims = self.u32()?;
        if n_dims > MAX_DIMS {
            return Err(format!("{n_dims} dimensions, more than {MAX_DIMS}"));
        }
        let dims = (0..n_dims).map(|_| self.length()).collect::<Result<Vec<u64>, _>>()?;
        let number = self.u32()?;
        let dtype = dtype_of(number).ok_or_else(|| format!("type {number}, not one this build reads"))?;
        Ok((dims, dtype, self.u64()?))
    }

    /// A value of type number `kind`.
    fn value(&mut self, kind: u32, depth: usize) -> Result<Value, String> {
        self.values += 1;
        if self.values > MAX_VALUES {
            return Err(format!("the metadata holds more than {MAX_VALUES} values"));
        }
        Ok(match kind {
            0 => Value::U8(u8::from_le_bytes(self.bytes()?)),
            1 => Value::I8(i8::from_le_bytes(self.bytes()?)),
            2 => Value::U16(u16::from_le_bytes(self.bytes()?)),
            3 => Value::I16(i16::from_le_bytes(self.bytes()?)),
            4 => Value::U32(self.u32()?),
            5 => Value::I32(i32::from_le_bytes(self.bytes()?)),
            6 => Value::F32(f32::from_le_bytes(self.bytes()?)),
            7 => match self.bytes::<1>()? {
                [0] => Value::Bool(false),
                [1] => Value::Bool(true),
                [other] => return Err(format!("a bool of value {other}, not 0 or 1")),
            },
            8 => Value::String(self.string()?),
            9 => {
                if depth >= MAX_DEPTH {
                    return Err(format!("arrays nested more than {MAX_DEPTH} deep"));
                }
                let inner = self.u32()?;
                let each = min_size(inner, self.prefix()).ok_or_else(|| bad_type(inner))?;
                let n = self.count(each, "an array length")?;
                let mut items = Vec::new();
                for _ in 0..n {
                    items.push(self.value(inner, depth + 1)?);
                }
                Value::Array(items)
            }
            10 => Value::U64(self.u64()?),
            11 => Value::I64(i64::from_le_bytes(self.bytes()?)),
            12 => Value::F64(f64::from_le_bytes(self.bytes()?)),
            other => return Err(bad_type(other)),
        })
    }
}

fn bad_type(kind: u32) -> String {
    format!("value type {kind}, not a GGUF type (0 to 12)")
}

/// The fewest bytes a value of type number `kind` takes in the file (`prefix`: a length's bytes).
fn min_size(kind: u32, prefix: u64) -> Option<u64> {
    Some(match kind {
        0 | 1 | 7 => 1,
        2 | 3 => 2,
        4..=6 => 4,
        10..=12 => 8,
        8 => prefix,
        9 => 4 + prefix,
        _ => return None,
    })
}
