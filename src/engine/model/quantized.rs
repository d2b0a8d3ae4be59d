//! The activations of a forward pass quantized for the matrices: 8-bit blocks of 32 for the 32-value
//! block forms and, when the model has a K-quant matrix, blocks of 256 for the K forms; each token's
//! rows written from many threads at once, then read by the matrices as [`Activations`].

use super::super::kernels::{Activations, Kernels};
use super::super::kquant::{KActBlock, SUPER};
use super::super::quant::{ActBlock, BLOCK};
use super::super::threads::Disjoint;

/// The quantized activations of a pass, in both forms (the K forms' only when a matrix reads them),
/// token rows written from many threads at once.
pub(super) struct Quantized<'a> {
    blocks: Disjoint<'a, ActBlock>,
    supers: Disjoint<'a, KActBlock>,
    k_forms: bool,
}

impl<'a> Quantized<'a> {
    pub(super) fn new(blocks: &'a mut [ActBlock], supers: &'a mut [KActBlock], k_forms: bool) -> Self {
        Self { blocks: Disjoint::new(blocks), supers: Disjoint::new(supers), k_forms }
    }

    /// Whether rows of `width` values have a K form (a matrix of `width` columns may be one).
    fn supers(&self, width: usize) -> bool {
        self.k_forms && width.is_multiple_of(SUPER)
    }

    /// Token `t`'s row `x` (of its width) quantized into that token's rows.
    ///
    /// # Safety
    /// No other thread reads or writes token `t`'s rows meanwhile.
    pub(super) unsafe fn token(&self, t: usize, x: &[f32], kernels: Kernels) {
        let width = x.len();
        // SAFETY: token t's rows (this function's contract).
        kernels.quantize(x, unsafe { self.blocks.slice(t * width / BLOCK..(t + 1) * width / BLOCK) });
        if self.supers(width) {
            // SAFETY: as above.
            kernels.quantize_k(x, unsafe { self.supers.slice(t * width / SUPER..(t + 1) * width / SUPER) });
        }
    }

    /// The first `seq` rows (of `values.len() / seq` values each), with their f32 `values`.
    ///
    /// # Safety
    /// No thread writes them while the result lives.
    pub(super) unsafe fn rows<'v>(&'v self, values: &'v [f32], seq: usize) -> Activations<'v> {
        let width = values.len() / seq;
        // SAFETY: read only (this function's contract).
        let supers: &[KActBlock] =
            if self.supers(width) { unsafe { self.supers.slice(0..seq * width / SUPER) } } else { &[] };
        Activations { blocks: unsafe { self.blocks.slice(0..seq * width / BLOCK) }, supers, values }
    }
}
