//! The eval screen: the open prompt's cases against the current model, scored by the eval core.
//! [`state`] (+ [`filter`], [`review`]) what it shows; [`update`] (+ [`history`], [`review_keys`],
//! [`truncation`]) its keys and news, pure; [`view`] (+ [`diff_view`], [`review_view`],
//! [`truncation_view`]) its drawing; [`job`] its effects on the job bridge.

pub mod approve;
pub mod diff_view;
pub mod filter;
pub mod history;
pub mod job;
pub mod parts;
pub mod review;
pub mod review_keys;
pub mod review_view;
pub mod state;
pub mod truncation;
pub mod truncation_view;
pub mod update;
pub mod view;
