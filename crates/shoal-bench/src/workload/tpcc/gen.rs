//! TPC-C's random generators (TPC-C Standard Specification, revision 5.11):
//! - `NURand(A, x, y)`, clause 2.1.6, with the run-time constants `C` of clause 2.1.6.1
//!   ([`NuRandConstants`]: the load and run values of `C` for C_LAST obey the delta rule);
//! - customer last names from the syllable table, clause 4.3.2.3 ([`last_name`]);
//! - random a-strings and n-strings, clause 4.3.2.2, zip codes, clause 4.3.2.7, and the
//!   "ORIGINAL" marker in 10% of I_DATA and S_DATA, clause 4.3.3.1 ([`data_field`]).
//!
//! Every function takes the caller's random number generator, so a run is reproducible from
//! its seed.

use rand::Rng;

/// The syllables of clause 4.3.2.3, indexed by a digit.
pub const SYLLABLES: [&str; 10] = [
    "BAR", "OUGHT", "ABLE", "PRI", "PRES", "ESE", "ANTI", "CALLY", "ATION", "EING",
];

/// `A` of NURand for C_LAST (range 0..=999).
pub const A_C_LAST: u32 = 255;
/// `A` of NURand for C_ID (range 1..=3000).
pub const A_C_ID: u32 = 1023;
/// `A` of NURand for OL_I_ID (range 1..=100,000).
pub const A_OL_I_ID: u32 = 8191;

/// The run-time constants `C` of NURand (clause 2.1.6.1): one per `A`, chosen at random in
/// `0..=A`. C_LAST has two: the one used to load the database and the one used in the
/// measured run, whose difference must lie in 65..=119 and be neither 96 nor 112.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NuRandConstants {
    /// `C` for C_LAST while loading.
    pub c_last_load: u32,
    /// `C` for C_LAST during the run.
    pub c_last_run: u32,
    /// `C` for C_ID.
    pub c_id: u32,
    /// `C` for OL_I_ID.
    pub ol_i_id: u32,
}

/// True if `load` and `run` are valid C_LAST constants for the load and the run (clause
/// 2.1.6.1): `|run - load|` in 65..=119, not 96, not 112.
pub fn c_last_delta_ok(load: u32, run: u32) -> bool {
    let d = load.abs_diff(run);
    (65..=119).contains(&d) && d != 96 && d != 112
}

impl NuRandConstants {
    /// Draws the constants, `c_last_run` until the delta rule holds.
    pub fn random(rng: &mut impl Rng) -> NuRandConstants {
        let c_last_load = rng.random_range(0..=A_C_LAST);
        let c_last_run = loop {
            let c = rng.random_range(0..=A_C_LAST);
            if c_last_delta_ok(c_last_load, c) {
                break c;
            }
        };
        NuRandConstants {
            c_last_load,
            c_last_run,
            c_id: rng.random_range(0..=A_C_ID),
            ol_i_id: rng.random_range(0..=A_OL_I_ID),
        }
    }
}

/// `NURand(A, x, y) = (((random(0, A) | random(x, y)) + C) % (y - x + 1)) + x` (clause
/// 2.1.6), where `random(a, b)` is uniform over `a..=b`.
///
/// # Panics
/// If `x > y` (a programming error: the spec's ranges are constants).
pub fn nurand(rng: &mut impl Rng, a: u32, c: u32, x: u32, y: u32) -> u32 {
    assert!(x <= y, "NURand range {x}..={y}");
    let r = rng.random_range(0..=a) | rng.random_range(x..=y);
    (r.wrapping_add(c) % (y - x + 1)) + x
}

/// The last name of number `n` in 0..=999 (clause 4.3.2.3): the syllables of its three
/// digits, hundreds first (e.g. 371 is "PRICALLYOUGHT").
///
/// # Panics
/// If `n > 999`.
pub fn last_name(n: u32) -> String {
    assert!(n <= 999, "last-name number {n} is over 999");
    let d = [n / 100, (n / 10) % 10, n % 10];
    d.iter().map(|&i| SYLLABLES[i as usize]).collect()
}

/// C_LAST of customer `c_id` (1..=3000) at load time (clause 4.3.3.1): the first 1,000
/// customers of a district get the names of 0..=999 in order, the rest
/// `NURand(255, 0, 999)` with the load constant.
pub fn load_last_name(rng: &mut impl Rng, k: &NuRandConstants, c_id: u32) -> String {
    if (1..=1000).contains(&c_id) {
        last_name(c_id - 1)
    } else {
        last_name(nurand(rng, A_C_LAST, k.c_last_load, 0, 999))
    }
}

const ALNUM: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";

/// A random a-string of `min..=max` characters (clause 4.3.2.2; letters and digits).
pub fn a_string(rng: &mut impl Rng, min: usize, max: usize) -> String {
    let n = rng.random_range(min..=max);
    (0..n)
        .map(|_| ALNUM[rng.random_range(0..ALNUM.len())] as char)
        .collect()
}

/// A random n-string of `min..=max` digits (clause 4.3.2.2).
pub fn n_string(rng: &mut impl Rng, min: usize, max: usize) -> String {
    let n = rng.random_range(min..=max);
    (0..n)
        .map(|_| char::from(b'0' + rng.random_range(0..10u8)))
        .collect()
}

/// A zip code: 4 random digits followed by "11111" (clause 4.3.2.7).
pub fn zip(rng: &mut impl Rng) -> String {
    n_string(rng, 4, 4) + "11111"
}

/// I_DATA or S_DATA (clause 4.3.3.1): an a-string of 26..=50 characters, in which, for 10%
/// of the rows chosen at random, "ORIGINAL" replaces 8 characters at a random position.
pub fn data_field(rng: &mut impl Rng) -> String {
    let mut s = a_string(rng, 26, 50);
    if rng.random_range(0..10) == 0 {
        let at = rng.random_range(0..=s.len() - 8);
        s.replace_range(at..at + 8, "ORIGINAL");
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::SmallRng;
    use rand::SeedableRng;

    #[test]
    fn nurand_stays_in_range_and_is_skewed() {
        let mut rng = SmallRng::seed_from_u64(1);
        let k = NuRandConstants::random(&mut rng);
        let mut counts = vec![0u32; 1000];
        for _ in 0..200_000 {
            let v = nurand(&mut rng, A_C_LAST, k.c_last_run, 0, 999);
            assert!(v <= 999);
            counts[v as usize] += 1;
        }
        for _ in 0..100_000 {
            let c = nurand(&mut rng, A_C_ID, k.c_id, 1, 3000);
            assert!((1..=3000).contains(&c));
            let i = nurand(&mut rng, A_OL_I_ID, k.ol_i_id, 1, 100_000);
            assert!((1..=100_000).contains(&i));
        }
        // Non-uniform: the most frequent value is drawn several times as often as the
        // least frequent (uniform draws of 200 per value would keep them within ~2x).
        let (lo, hi) = (counts.iter().min().unwrap(), counts.iter().max().unwrap());
        assert!(*hi > 4 * (*lo).max(1), "min {lo}, max {hi}");
    }

    #[test]
    fn c_last_constants_obey_the_delta_rule() {
        for seed in 0..500 {
            let k = NuRandConstants::random(&mut SmallRng::seed_from_u64(seed));
            assert!(c_last_delta_ok(k.c_last_load, k.c_last_run), "{k:?}");
            assert!(k.c_last_load <= 255 && k.c_id <= 1023 && k.ol_i_id <= 8191);
        }
        assert!(!c_last_delta_ok(0, 96) && !c_last_delta_ok(200, 88));
        assert!(!c_last_delta_ok(0, 64) && !c_last_delta_ok(0, 120));
        assert!(c_last_delta_ok(0, 65) && c_last_delta_ok(150, 31));
    }

    #[test]
    fn last_names_come_from_the_syllable_table() {
        assert_eq!(last_name(0), "BARBARBAR");
        assert_eq!(last_name(371), "PRICALLYOUGHT");
        assert_eq!(last_name(999), "EINGEINGEING");
        let mut rng = SmallRng::seed_from_u64(3);
        let k = NuRandConstants::random(&mut rng);
        for c_id in 1..=1000 {
            assert_eq!(load_last_name(&mut rng, &k, c_id), last_name(c_id - 1));
        }
        let names: Vec<String> = (0..=999).map(last_name).collect();
        for c_id in 1001..=3000 {
            assert!(names.contains(&load_last_name(&mut rng, &k, c_id)));
        }
    }

    #[test]
    fn strings_have_their_lengths_and_alphabets() {
        let mut rng = SmallRng::seed_from_u64(4);
        for _ in 0..1000 {
            let a = a_string(&mut rng, 8, 16);
            assert!((8..=16).contains(&a.len()) && a.bytes().all(|b| ALNUM.contains(&b)));
            let n = n_string(&mut rng, 16, 16);
            assert!(n.len() == 16 && n.bytes().all(|b| b.is_ascii_digit()));
            let z = zip(&mut rng);
            assert!(z.len() == 9 && z.ends_with("11111"));
        }
    }

    #[test]
    fn about_ten_percent_of_data_fields_are_original() {
        let mut rng = SmallRng::seed_from_u64(5);
        let n = 20_000;
        let original = (0..n)
            .map(|_| data_field(&mut rng))
            .inspect(|d| assert!((26..=50).contains(&d.len())))
            .filter(|d| d.contains("ORIGINAL"))
            .count();
        // 10% of 20,000 = 2,000; a binomial's standard deviation here is about 42.
        assert!((1800..=2200).contains(&original), "{original} of {n}");
    }
}
