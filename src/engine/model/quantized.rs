//! The activations of a forward pass quantized for the matrices: 8-bit blocks of 32 for the 32-value
//! block forms, blocks of 256 for the K forms, each only for the widths whose matrices read it
//! ([`Forms`]); each token's rows written from many threads at once, then read by the matrices as
//! [`Activations`].

use super::super::kernels::{Activations, Kernels};
use super::super::kquant::{KActBlock, SUPER};
use super::super::quant::{ActBlock, Blocks, Matrix, BLOCK};
use super::super::threads::Disjoint;

/// Which quantized forms the rows of each width are read in: a model's matrices, by their columns.
#[derive(Clone, Debug, Default)]
pub(super) struct Forms {
    /// (width, blocks of 32, blocks of 256) for each width a matrix reads.
    widths: Vec<(usize, bool, bool)>,
}

impl Forms {
    /// The forms the `multiplied` matrices read (f32 ones neither: they read the values as they are).
    pub(super) fn of<'m>(multiplied: impl IntoIterator<Item = &'m Matrix>) -> Self {
        let mut forms = Self::default();
        for m in multiplied {
            let (blocks, supers) = match m.blocks {
                Blocks::Dense(_) => (false, false),
                _ if m.k_form() => (false, true),
                _ => (true, false),
            };
            match forms.widths.iter_mut().find(|(w, _, _)| *w == m.cols) {
                Some((_, b, s)) => (*b, *s) = (*b || blocks, *s || supers),
                None => forms.widths.push((m.cols, blocks, supers)),
            }
        }
        forms
    }

    /// Whether rows of `width` are read as blocks of 32, and as blocks of 256 (a width no matrix
    /// reads: both, where they fit).
    fn at(&self, width: usize) -> (bool, bool) {
        let (blocks, supers) = self.widths.iter().find(|(w, _, _)| *w == width).map_or((true, true), |f| (f.1, f.2));
        (blocks, supers && width.is_multiple_of(SUPER))
    }
}

/// The quantized activations of a pass, in the forms its matrices read, token rows written from many
/// threads at once.
pub(super) struct Quantized<'a> {
    blocks: Disjoint<'a, ActBlock>,
    supers: Disjoint<'a, KActBlock>,
    forms: &'a Forms,
}

impl<'a> Quantized<'a> {
    pub(super) fn new(blocks: &'a mut [ActBlock], supers: &'a mut [KActBlock], forms: &'a Forms) -> Self {
        Self { blocks: Disjoint::new(blocks), supers: Disjoint::new(supers), forms }
    }

    /// Token `t`'s row `x` (of its width) quantized into that token's rows.
    ///
    /// # Safety
    /// No other thread reads or writes token `t`'s rows meanwhile.
    pub(super) unsafe fn token(&self, t: usize, x: &[f32], kernels: Kernels) {
        let width = x.len();
        let (blocks, supers) = self.forms.at(width);
        if blocks {
            // SAFETY: token t's rows (this function's contract).
            kernels.quantize(x, unsafe { self.blocks.slice(t * width / BLOCK..(t + 1) * width / BLOCK) });
        }
        if supers {
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
        let (blocks, supers) = self.forms.at(width);
        let supers: &[KActBlock] = if supers { unsafe { self.supers.slice(0..seq * width / SUPER) } } else { &[] };
        let blocks: &[ActBlock] = if blocks { unsafe { self.blocks.slice(0..seq * width / BLOCK) } } else { &[] };
        Activations { blocks, supers, values }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn matrix(cols: usize, blocks: Blocks) -> Matrix {
        Matrix { rows: 16, cols, blocks }
    }

    /// Gemma 3's shapes: its 640-wide rows read by 32-value forms only, its 1024- and 2048-wide ones
    /// by K forms only; a width read both ways gets both, a width no matrix reads both where they fit.
    #[test]
    fn each_width_is_quantized_only_in_the_forms_its_matrices_read() {
        let forms = Forms::of(&[
            matrix(640, Blocks::Q5x16(Vec::new().into())),
            matrix(640, Blocks::Q8x16(Vec::new().into())),
            matrix(1024, Blocks::Q4Kx16(Vec::new().into())),
            matrix(2048, Blocks::Q6Kx16(Vec::new().into())),
            matrix(512, Blocks::Q4Kx16(Vec::new().into())),
            matrix(512, Blocks::Q4x16(Vec::new().into())),
            matrix(4096, Blocks::Dense(Vec::new().into())),
        ]);
        assert_eq!(forms.at(640), (true, false));
        assert_eq!(forms.at(1024), (false, true));
        assert_eq!(forms.at(2048), (false, true));
        assert_eq!(forms.at(512), (true, true));
        assert_eq!(forms.at(4096), (false, false));
        assert_eq!(forms.at(768), (true, true));
        assert_eq!(forms.at(96), (true, false), "a width of no whole super-block has no K form");
    }
}
