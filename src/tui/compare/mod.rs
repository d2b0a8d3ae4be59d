//! The compare screen: the prompt and its json/jsonl twin run side by side. [`state`] what it shows;
//! [`update`] its keys and news, pure; [`view`] (+ [`chart`]) its drawing; [`job`] its effect on the
//! job bridge.

pub mod chart;
pub mod job;
pub mod state;
pub mod update;
pub mod view;
