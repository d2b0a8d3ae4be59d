//! The sampling seed of a run: at a temperature above 0 every run samples, so a run given no seed
//! gets a fresh one, and repeat k of an eval cell given seed S uses S + k (k from 0). The seed sent is
//! the one the run record keeps, so `run --seed S` with a recorded seed asks for the same answer.

use crate::provider::Request;

/// Whether `request` samples: a temperature above 0 (none, or 0, is the provider's greedy or default
/// decoding, which a seed does not change here).
pub fn samples(request: &Request) -> bool {
    request.temperature.is_some_and(|t| t.is_finite() && t > 0.0)
}

/// Gives a sampling `request` without a seed a fresh one (a greedy request is left as it is).
pub fn choose(request: &mut Request) {
    if samples(request) && request.seed.is_none() {
        request.seed = Some(fresh());
    }
}

/// The seed of repeat `repeat` (1-based) of a cell whose runs are given `seed`: `seed + repeat - 1`
/// (wrapping), so the first repeat is the seed itself.
pub fn for_repeat(seed: u64, repeat: u32) -> u64 {
    seed.wrapping_add(u64::from(repeat.saturating_sub(1)))
}

/// A seed from the operating system's random source (the clock's nanoseconds if it has none).
fn fresh() -> u64 {
    getrandom::u64().unwrap_or_else(|_| {
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
        now.map_or(0, |d| d.as_nanos() as u64) ^ u64::from(std::process::id()).rotate_left(32)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sampling_request_gets_a_fresh_seed_and_keeps_a_given_one() {
        let sampled = Request::new("m").user("u").temperature(0.7);
        let seeds: Vec<Option<u64>> = (0..4)
            .map(|_| {
                let mut request = sampled.clone();
                choose(&mut request);
                request.seed
            })
            .collect();
        assert!(seeds.iter().all(Option::is_some), "{seeds:?}");
        assert!(seeds.windows(2).any(|w| w[0] != w[1]), "fresh seeds differ: {seeds:?}");
        let mut given = Request { seed: Some(7), ..sampled };
        choose(&mut given);
        assert_eq!(given.seed, Some(7));
        for greedy in [Request::new("m").user("u"), Request::new("m").user("u").temperature(0.0)] {
            let mut request = greedy;
            choose(&mut request);
            assert_eq!(request.seed, None, "a greedy request is not given a seed");
        }
        assert_eq!((for_repeat(7, 1), for_repeat(7, 2), for_repeat(u64::MAX, 2)), (7, 8, 0));
    }
}
