//! The optimize screen: `optimize::run` on the editors' prompt, opened from the eval screen.
//! [`state`] what it shows; [`update`] (+ [`accept`]) its keys and news, pure; [`view`] its drawing;
//! [`job`] its effect on the job bridge.

pub mod accept;
pub mod job;
pub mod state;
pub mod update;
pub mod view;
