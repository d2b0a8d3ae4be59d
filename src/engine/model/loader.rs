//! Reading a plan's tensors at load: block matrices from the stored weights when they are there, else
//! from the GGUF; vectors and the rotary factors from the GGUF; the block matrices the stored weights hold.

use std::io::{Read, Seek};

use candle_core::quantized::gguf_file::Content;

use super::super::arch::Plan;
use super::super::quant::{vector, Blocks, Matrix};
use super::super::EngineError;

/// Reads the plan's tensors: matrices from the stored weights when there, else from the GGUF.
pub(super) struct Loader<'a, R> {
    pub(super) content: &'a Content,
    pub(super) reader: &'a mut R,
    pub(super) stored: std::collections::HashMap<String, Matrix>,
    pub(super) scratch: Vec<u8>,
    /// Whether a block matrix was rebuilt (interleaved) from the GGUF. f32 rows are not stored (as big
    /// as the dequantized model, and no quicker to read back than to dequantize): always read from it.
    pub(super) rebuilt: bool,
}

impl<R: Read + Seek> Loader<'_, R> {
    /// Matrix `name` from the stored weights, else from the GGUF.
    pub(super) fn matrix(&mut self, name: &str) -> Result<Matrix, EngineError> {
        if let Some(m) = self.stored.remove(name) {
            return Ok(m);
        }
        let m = Matrix::read(self.content, self.reader, name, &mut self.scratch)?;
        self.rebuilt |= !matches!(m.blocks, Blocks::Dense(_));
        Ok(m)
    }

    pub(super) fn vector(&mut self, name: &str) -> Result<Vec<f32>, EngineError> {
        vector(self.content, self.reader, name)
    }

    pub(super) fn optional(&mut self, name: &Option<String>) -> Result<Option<Vec<f32>>, EngineError> {
        name.as_deref().map(|name| self.vector(name)).transpose()
    }
}

impl super::Model {
    /// Every block matrix (what the stored weights hold) with its tensor name.
    pub(super) fn named_matrices(&self) -> Vec<(&str, &Matrix)> {
        let mut out: Vec<(&str, &Matrix)> = Vec::new();
        for (l, p) in self.layers.iter().zip(&self.plan.layers) {
            out.extend([
                (p.q.weight.as_str(), &l.wq),
                (&p.k.weight, &l.wk),
                (&p.v.weight, &l.wv),
                (&p.attn_output, &l.wo),
                (&p.gate, &l.gate),
                (&p.up, &l.up),
                (&p.down, &l.down),
            ]);
        }
        out.push((&self.plan.embeddings, &self.embeddings));
        if let Some(output) = &self.output {
            out.push((&self.plan.output, output));
        }
        out.retain(|(_, m)| !matches!(m.blocks, Blocks::Dense(_)));
        out
    }
}

/// The rotary factors the plan names (`rope_freqs.weight`, one per pair), each finite and above 0;
/// none: empty.
pub(in crate::engine) fn rope_factors<R: Read + Seek>(
    content: &Content,
    reader: &mut R,
    plan: &Plan,
) -> Result<Vec<f32>, EngineError> {
    let Some(name) = &plan.rope_factors else { return Ok(Vec::new()) };
    let factors = vector(content, reader, name)?;
    if let Some(bad) = factors.iter().find(|f| !f.is_finite() || **f <= 0.0) {
        return Err(EngineError::Model(format!("tensor `{name}` holds the factor {bad} (finite, above 0 expected)")));
    }
    Ok(factors)
}
