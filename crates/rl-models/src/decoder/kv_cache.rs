//! [`KvCache`]: per-layer keys and values for incremental decoding.

use burn::tensor::backend::Backend;
use burn::tensor::{Int, Tensor, TensorData};

use super::ModelConfig;
use crate::error::ModelError;

/// Positions of the per-layer tail buffer of [`KvCache`] (see there).
pub(super) const CACHE_TAIL: usize = 64;

/// Keys and values of one layer: a contiguous body plus a small tail buffer.
#[derive(Debug)]
pub(super) struct LayerCache<B: Backend> {
    /// `[batch, nkv, body_len, hd]` keys and values.
    pub(super) body: Option<(Tensor<B, 4>, Tensor<B, 4>)>,
    /// `[batch, nkv, CACHE_TAIL, hd]` keys and values, the first `tail_len` positions filled.
    pub(super) tail: Option<(Tensor<B, 4>, Tensor<B, 4>)>,
}

/// Per-layer key/value cache for incremental decoding, for at most `capacity` positions (prompt +
/// new tokens, never `max_position_embeddings`).
///
/// Each layer keeps its keys and values `[batch, nkv, positions, hd]` as a contiguous *body* plus
/// a *tail* buffer of 64 positions: a decoding step writes its token into the tail (a copy of 64
/// positions at most, whatever the length), and a full tail is appended to the body (one copy of
/// the body every 64 steps). Attention reads both through views, without copying them. (Writing
/// into one preallocated `[.., capacity, ..]` tensor would copy the whole tensor on every step on
/// the CPU backend, whose `slice_assign` is not in place.) Memory grows with the positions
/// actually cached.
///
/// Besides the tensors the cache tracks, per row, which cached positions are real tokens and how
/// many real tokens precede the next one (its position id).
#[derive(Debug)]
pub struct KvCache<B: Backend> {
    pub(super) layers: Vec<LayerCache<B>>,
    pub(super) batch: usize,
    pub(super) capacity: usize,
    pub(super) len: usize,
    pub(super) body_len: usize,
    pub(super) tail_len: usize,
    pub(super) key_valid: Vec<bool>,
    pub(super) valid_count: Vec<usize>,
}

/// Where a forward call writes its new keys and values.
#[derive(Clone, Copy, Debug)]
pub(super) enum CacheWrite {
    /// Into the tail, at this offset.
    Tail(usize),
    /// Append the tail's `tail_len` positions, then the new ones, to the body.
    Body { tail_len: usize },
}

impl<B: Backend> KvCache<B> {
    /// An empty cache for `batch` rows and at most `capacity` positions.
    pub fn new(config: &ModelConfig, batch: usize, capacity: usize) -> Self {
        Self {
            layers: (0..config.num_hidden_layers)
                .map(|_| LayerCache {
                    body: None,
                    tail: None,
                })
                .collect(),
            batch,
            capacity,
            len: 0,
            body_len: 0,
            tail_len: 0,
            key_valid: vec![false; batch * capacity],
            valid_count: vec![0; batch],
        }
    }

    /// Positions filled so far (the same for every row; padding counts).
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether nothing has been cached yet.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Most positions the cache accepts.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Rows.
    pub fn batch(&self) -> usize {
        self.batch
    }

    /// Where `l` new positions go, and the body/tail lengths afterwards.
    pub(super) fn plan(&self, l: usize) -> (CacheWrite, usize, usize) {
        if self.tail_len + l <= CACHE_TAIL && self.len > 0 {
            (
                CacheWrite::Tail(self.tail_len),
                self.body_len,
                self.tail_len + l,
            )
        } else {
            (
                CacheWrite::Body {
                    tail_len: self.tail_len,
                },
                self.body_len + self.tail_len + l,
                0,
            )
        }
    }

    /// Keeps only the given rows (in that order), e.g. to drop finished samples during
    /// generation. Costs one copy of the cache.
    pub fn retain_rows(&mut self, rows: &[usize]) -> Result<(), ModelError> {
        if let Some(&bad) = rows.iter().find(|&&r| r >= self.batch) {
            return Err(ModelError::InvalidInput(format!(
                "row {bad} out of range for a cache of {} rows",
                self.batch
            )));
        }
        if rows.is_empty() {
            return Err(ModelError::InvalidInput(
                "retain_rows needs at least one row".to_string(),
            ));
        }
        let mut key_valid = Vec::with_capacity(rows.len() * self.capacity);
        for &r in rows {
            key_valid
                .extend_from_slice(&self.key_valid[r * self.capacity..(r + 1) * self.capacity]);
        }
        let valid_count = rows.iter().map(|&r| self.valid_count[r]).collect();
        let select = |pair: Option<(Tensor<B, 4>, Tensor<B, 4>)>| {
            pair.map(|(k, v)| {
                let idx = Tensor::<B, 1, Int>::from_data(
                    TensorData::new(rows.iter().map(|&r| r as i64).collect(), [rows.len()]),
                    &k.device(),
                );
                (k.select(0, idx.clone()), v.select(0, idx))
            })
        };
        for layer in self.layers.iter_mut() {
            layer.body = select(layer.body.take());
            layer.tail = select(layer.tail.take());
        }
        self.key_valid = key_valid;
        self.valid_count = valid_count;
        self.batch = rows.len();
        Ok(())
    }
}
