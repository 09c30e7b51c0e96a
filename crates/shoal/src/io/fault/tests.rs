//! Tests of the simulated disk, one fault rule at a time.

use super::*;
use crate::io::AlignedBuf;

const CREATE: OpenOptions = OpenOptions {
    create: true,
    create_new: false,
    direct: false,
};

fn open(s: &FaultStorage, name: &str) -> Arc<dyn StorageFile> {
    s.open(name, CREATE).unwrap()
}

fn machine(config: FaultConfig) -> FaultStorage {
    FaultStorage::new(config).unwrap()
}

fn raw_os_error(err: &Error) -> Option<i32> {
    match err {
        Error::Io { source, .. } => source.raw_os_error(),
        _ => None,
    }
}

#[test]
fn is_send_sync_and_clone_shares_the_machine() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<FaultStorage>();
    let s = machine(FaultConfig::new(1));
    let other = s.clone();
    open(&s, "a");
    assert_eq!(other.list().unwrap(), vec!["a".to_string()]);
    assert!(format!("{s:?}").contains("crashed"));
}

#[test]
fn power_loss_drops_unsynced_and_keeps_synced() {
    let s = machine(FaultConfig::new(1));
    let f = open(&s, "data");
    f.write_all_at(&[1; 1000], 0).unwrap();
    f.sync_data().unwrap();
    f.write_all_at(&[2; 100], 500).unwrap();
    f.write_all_at(&[3; 100], 2000).unwrap();
    f.set_len(4000).unwrap();
    assert_eq!(f.len().unwrap(), 4000);
    assert_eq!(s.durable_contents("data").unwrap(), vec![1; 1000]);
    s.crash_now();
    assert!(s.is_crashed());
    assert_eq!(s.contents("data").unwrap(), vec![1; 1000]);
    s.restart();
    let f = open(&s, "data");
    assert_eq!(f.len().unwrap(), 1000);
    let mut buf = vec![0; 1000];
    f.read_exact_at(&mut buf, 0).unwrap();
    assert_eq!(buf, vec![1; 1000]);
    // A synced shrink is durable too.
    f.set_len(10).unwrap();
    f.sync_data().unwrap();
    s.restart();
    assert_eq!(s.durable_contents("data").unwrap(), vec![1; 10]);
    assert_eq!(s.events().len(), 2);
}

#[test]
fn calls_after_crash_fail_until_restart_and_old_handles_stay_dead() {
    let s = machine(FaultConfig::new(1));
    let f = open(&s, "data");
    f.write_all_at(b"abc", 0).unwrap();
    f.sync_data().unwrap();
    s.crash_now();
    let before = s.op_counts();
    let mut buf = [0u8; 3];
    let errors = [
        f.read_exact_at(&mut buf, 0).unwrap_err(),
        f.write_all_at(b"x", 0).unwrap_err(),
        f.sync_data().unwrap_err(),
        f.len().unwrap_err(),
        f.set_len(0).unwrap_err(),
        s.open("data", CREATE).unwrap_err(),
        s.exists("data").unwrap_err(),
        s.remove("data").unwrap_err(),
        s.list().unwrap_err(),
        s.sync_dir().unwrap_err(),
    ];
    for err in &errors {
        assert!(FaultStorage::is_crash_error(err), "{err:?}");
        assert!(err.to_string().contains("crashed"), "{err}");
    }
    assert_eq!(s.op_counts(), before, "refused calls are not counted");
    s.restart();
    assert!(!s.is_crashed());
    let err = f.read_exact_at(&mut buf, 0).unwrap_err();
    assert!(FaultStorage::is_crash_error(&err));
    assert!(err.to_string().contains("reopen"), "{err}");
    let f = open(&s, "data");
    f.read_exact_at(&mut buf, 0).unwrap();
    assert_eq!(&buf, b"abc");
    assert!(!FaultStorage::is_crash_error(&Error::invalid("x", "y")));
}

/// Writes 4 KiB of 'o', syncs, then makes a torn write of 'n' over bytes 100..3700 and
/// returns the durable file after the restart.
fn torn_outcome(seed: u64) -> Vec<u8> {
    let s = machine(FaultConfig::new(seed));
    let f = open(&s, "data");
    f.write_all_at(&[b'o'; 4096], 0).unwrap();
    f.sync_data().unwrap();
    f.write_all_at(&[b'x'; 512], 0).unwrap(); // unsynced: always lost
    s.arm(FaultRule::nth(FaultKind::TornWrite, OpClass::Write, 1))
        .unwrap();
    let err = f.write_all_at(&[b'n'; 3600], 100).unwrap_err();
    assert!(FaultStorage::is_crash_error(&err));
    let event = s.events().pop().unwrap();
    assert_eq!(event.kind, FaultKind::TornWrite);
    let (kept, sectors) = event.torn_sectors.unwrap();
    assert_eq!(sectors, 8);
    assert!(kept <= sectors);
    s.restart();
    let durable = s.durable_contents("data").unwrap();
    assert_eq!(durable.len(), 4096);
    // New bytes from 100 up to a sector boundary (or the write's end), old bytes elsewhere.
    let new_end = durable[100..]
        .iter()
        .position(|&b| b != b'n')
        .map_or(4096, |p| p + 100);
    let expected_end = if kept == sectors {
        3700
    } else {
        (kept as usize * SECTOR_SIZE).max(100)
    };
    assert_eq!(new_end, expected_end, "seed {seed}: kept {kept} sectors");
    assert!(durable[..100].iter().all(|&b| b == b'o'));
    assert!(durable[new_end..].iter().all(|&b| b == b'o'));
    durable
}

#[test]
fn torn_write_leaves_a_sector_aligned_mix_chosen_by_the_seed() {
    let mut outcomes = std::collections::BTreeSet::new();
    for seed in 0..32 {
        let first = torn_outcome(seed);
        assert_eq!(first, torn_outcome(seed), "seed {seed} is not reproducible");
        outcomes.insert(first);
    }
    assert!(outcomes.len() > 3, "only {} distinct tears", outcomes.len());
}

#[test]
fn torn_write_past_the_end_grows_the_durable_file_by_whole_pieces() {
    for seed in 0..16 {
        let s = machine(FaultConfig::new(seed).rule(FaultRule::nth(
            FaultKind::TornWrite,
            OpClass::Write,
            1,
        )));
        let f = open(&s, "log");
        assert!(f.write_all_at(&[7; 2048], 0).is_err());
        s.restart();
        let durable = s.durable_contents("log").unwrap();
        assert!(durable.len() % SECTOR_SIZE == 0 && durable.len() <= 2048);
        assert!(durable.iter().all(|&b| b == 7));
    }
}

#[test]
fn eio_on_read_write_and_sync() {
    let s = machine(
        FaultConfig::new(3)
            .rule(FaultRule::nth(FaultKind::Eio, OpClass::Read, 2))
            .rule(FaultRule::nth(FaultKind::Eio, OpClass::Write, 2))
            .rule(FaultRule::nth(FaultKind::Eio, OpClass::Sync, 2)),
    );
    let f = open(&s, "data");
    f.write_all_at(&[1; 64], 0).unwrap();
    let err = f.write_all_at(&[2; 64], 0).unwrap_err();
    assert_eq!(raw_os_error(&err), Some(libc::EIO), "{err:?}");
    assert!(matches!(err, Error::Io { op: "write", .. }));
    assert_eq!(
        s.contents("data").unwrap(),
        vec![1; 64],
        "a failed write changes nothing"
    );
    let mut buf = [0u8; 64];
    f.read_exact_at(&mut buf, 0).unwrap();
    let err = f.read_exact_at(&mut buf, 0).unwrap_err();
    assert_eq!(raw_os_error(&err), Some(libc::EIO));
    f.sync_data().unwrap();
    f.write_all_at(&[3; 64], 0).unwrap();
    let err = f.sync_data().unwrap_err();
    assert_eq!(raw_os_error(&err), Some(libc::EIO));
    assert!(matches!(err, Error::Io { op: "sync", .. }));
    // Fault rule 5: reads still see the write, but it never becomes durable.
    f.read_exact_at(&mut buf, 0).unwrap();
    assert_eq!(buf, [3; 64]);
    f.sync_data().unwrap();
    assert_eq!(s.durable_contents("data").unwrap(), vec![1; 64]);
    s.restart();
    assert_eq!(s.contents("data").unwrap(), vec![1; 64]);
    let counts = s.op_counts();
    assert_eq!((counts.reads, counts.writes, counts.syncs), (3, 3, 3));
}

#[test]
fn no_space_on_growth_and_capacity() {
    let s =
        machine(FaultConfig::new(1).rule(FaultRule::nth(FaultKind::NoSpace, OpClass::Write, 2)));
    let f = open(&s, "data");
    f.write_all_at(&[1; 100], 0).unwrap(); // growth 1
    f.write_all_at(&[2; 100], 0).unwrap(); // no growth: not watched
    let err = f.write_all_at(&[3; 10], 95).unwrap_err(); // growth 2
    assert!(
        matches!(&err, Error::NoSpace { op: "write", path } if path == "data"),
        "{err:?}"
    );
    assert_eq!(s.contents("data").unwrap(), vec![2; 100]);

    let s = machine(FaultConfig::new(1).capacity_bytes(1000));
    let a = open(&s, "a");
    let b = open(&s, "b");
    a.write_all_at(&[1; 600], 0).unwrap();
    b.write_all_at(&[1; 400], 0).unwrap();
    assert!(matches!(
        b.write_all_at(&[1], 400),
        Err(Error::NoSpace { .. })
    ));
    assert!(matches!(
        b.set_len(401),
        Err(Error::NoSpace { op: "set_len", .. })
    ));
    a.set_len(500).unwrap();
    b.set_len(500).unwrap();
    b.write_all_at(&[9; 100], 0).unwrap();
}

#[test]
fn nth_crash_point_fires_exactly_at_n() {
    for n in 1..=6u64 {
        let s = machine(FaultConfig::new(9).rule(FaultRule::nth(
            FaultKind::PowerLoss,
            OpClass::CrashPoint,
            n,
        )));
        let f = open(&s, "data");
        let mut done = 0;
        for i in 0..3u8 {
            if f.write_all_at(&[i; 10], u64::from(i) * 10).is_err() {
                break;
            }
            done += 1;
            if f.sync_data().is_err() {
                break;
            }
            done += 1;
        }
        assert_eq!(done, n - 1);
        assert_eq!(s.op_counts().crash_points, n);
        assert!(s.is_crashed());
        assert_eq!(s.events()[0].crash_point, n);
        // Writes i synced before crash point n survive: write i is point 2i+1, its sync 2i+2.
        let synced = (n - 1) / 2;
        s.restart();
        assert_eq!(
            s.durable_contents("data").unwrap().len() as u64,
            synced * 10
        );
    }
}

/// The pattern of a crash test: count the crash points of a workload, then crash at each.
#[test]
fn crash_at_every_point_of_a_workload() {
    fn workload(s: &FaultStorage) -> Result<()> {
        let f = s.open("data", CREATE)?;
        for i in 0..4u8 {
            f.write_all_at(&[i + 1; 700], u64::from(i) * 700)?;
            if i % 2 == 1 {
                f.sync_data()?;
            }
        }
        s.remove("data")?;
        s.sync_dir()
    }
    let s = machine(FaultConfig::new(0));
    workload(&s).unwrap();
    let total = s.op_counts().crash_points;
    assert_eq!(total, 7);
    for k in 1..=total {
        let s = machine(FaultConfig::new(k).rule(FaultRule::nth(
            FaultKind::TornWrite,
            OpClass::CrashPoint,
            k,
        )));
        assert!(FaultStorage::is_crash_error(&workload(&s).unwrap_err()));
        s.restart();
        if k == total {
            // Crash at the final sync_dir: the removal was never durable.
            assert_eq!(s.durable_contents("data").unwrap().len(), 2800);
            continue;
        }
        let durable = s.durable_contents("data").unwrap();
        let synced = [0, 0, 0, 1400, 1400, 1400, 2800][k as usize - 1];
        assert!(durable.len() >= synced, "k {k}: {}", durable.len());
        // Synced bytes are all there; past them only holes and (torn) later writes.
        let expect = |at: usize| (at / 700) as u8 + 1;
        assert!(durable[..synced]
            .iter()
            .enumerate()
            .all(|(at, &b)| b == expect(at)));
        assert!(durable
            .iter()
            .enumerate()
            .all(|(at, &b)| b == expect(at) || b == 0));
    }
}

#[test]
fn same_seed_and_calls_give_the_same_disk() {
    fn run(seed: u64) -> (Vec<u8>, Vec<FaultEvent>, OpCounts) {
        let s = machine(
            FaultConfig::new(seed)
                .unsynced_survival(0.5)
                .rule(FaultRule::probability(FaultKind::Eio, OpClass::Write, 0.2))
                .rule(FaultRule::probability(
                    FaultKind::TornWrite,
                    OpClass::CrashPoint,
                    0.1,
                )),
        );
        let mut f = open(&s, "data");
        for i in 0..200u64 {
            let byte = (i % 251) as u8;
            let _ = f.write_all_at(&vec![byte; 1300], (i * 977) % 20_000);
            if i % 5 == 4 {
                let _ = f.sync_data();
            }
            if s.is_crashed() {
                s.restart();
                f = open(&s, "data");
            }
        }
        (
            s.durable_contents("data").unwrap(),
            s.events(),
            s.op_counts(),
        )
    }
    let a = run(42);
    assert_eq!(a, run(42));
    assert!(!a.1.is_empty());
    assert_ne!(a.1, run(43).1);
}

#[test]
fn directory_changes_follow_fault_rule_4() {
    let s = machine(FaultConfig::new(1));
    let f = open(&s, "a");
    f.write_all_at(b"kept", 0).unwrap();
    f.sync_data().unwrap();
    open(&s, "b");
    s.remove("a").unwrap();
    assert!(!s.exists("a").unwrap());
    // The handle outlives the name.
    f.write_all_at(b"more", 4).unwrap();
    let mut buf = [0u8; 8];
    f.read_exact_at(&mut buf, 0).unwrap();
    assert_eq!(&buf, b"keptmore");
    s.restart();
    assert_eq!(s.list().unwrap(), vec!["a".to_string(), "b".to_string()]);
    assert_eq!(s.contents("a").unwrap(), b"kept");
    s.remove("a").unwrap();
    s.sync_dir().unwrap();
    s.restart();
    assert_eq!(s.list().unwrap(), vec!["b".to_string()]);
    let new = OpenOptions {
        create_new: true,
        ..OpenOptions::default()
    };
    assert_eq!(
        raw_os_error(&s.open("b", new).unwrap_err()),
        Some(libc::EEXIST)
    );
    let missing = s.open("zz", OpenOptions::default()).unwrap_err();
    assert_eq!(raw_os_error(&missing), Some(libc::ENOENT));
    assert_eq!(
        raw_os_error(&s.remove("zz").unwrap_err()),
        Some(libc::ENOENT)
    );
    assert!(matches!(
        s.open("a/b", CREATE),
        Err(Error::InvalidArgument { .. })
    ));
    assert!(matches!(s.exists(".."), Err(Error::InvalidArgument { .. })));
}

#[test]
fn direct_handles_require_sector_alignment() {
    let s = machine(FaultConfig::new(1));
    let opts = OpenOptions {
        create: true,
        direct: true,
        ..OpenOptions::default()
    };
    let f = s.open("d", opts).unwrap();
    let mut buf = AlignedBuf::new(4096);
    buf[0] = 5;
    f.write_all_at(&buf, 8192).unwrap();
    f.read_exact_at(&mut buf, 8192).unwrap();
    assert_eq!(buf[0], 5);
    for err in [
        f.write_all_at(&buf, 100).unwrap_err(),
        f.write_all_at(&buf[..100], 0).unwrap_err(),
        f.write_all_at(&buf[1..513], 0).unwrap_err(),
        f.read_exact_at(&mut buf[..10], 0).unwrap_err(),
    ] {
        assert_eq!(raw_os_error(&err), Some(libc::EINVAL), "{err:?}");
    }
    assert_eq!(s.op_counts().writes, 1);
}

#[test]
fn corruption_helpers_damage_both_images() {
    let s = machine(FaultConfig::new(1));
    let f = open(&s, "p");
    f.write_all_at(&[0; 16], 0).unwrap();
    f.sync_data().unwrap();
    s.corrupt("p", 4, &[9, 9]).unwrap();
    s.flip_bits("p", 0, 0b1000_0001).unwrap();
    let mut expected = vec![0u8; 16];
    expected[0] = 0x81;
    expected[4..6].copy_from_slice(&[9, 9]);
    assert_eq!(s.contents("p").unwrap(), expected);
    assert_eq!(s.durable_contents("p").unwrap(), expected);
    for bad in [
        s.corrupt("p", 15, &[1, 2]),
        s.flip_bits("p", 16, 1),
        s.flip_bits("p", u64::MAX, 1),
    ] {
        assert!(matches!(bad, Err(Error::InvalidArgument { .. })), "{bad:?}");
    }
    assert_eq!(
        raw_os_error(&s.corrupt("none", 0, &[1]).unwrap_err()),
        Some(libc::ENOENT)
    );
}

#[test]
fn bad_rules_and_settings_are_rejected() {
    use FaultKind::*;
    let bad = [
        FaultRule::nth(PowerLoss, OpClass::Write, 0),
        FaultRule::probability(Eio, OpClass::Read, 1.5),
        FaultRule::probability(Eio, OpClass::Read, f64::NAN),
        FaultRule::nth(TornWrite, OpClass::Read, 1),
        FaultRule::nth(NoSpace, OpClass::Sync, 1),
    ];
    for rule in bad {
        let err = FaultStorage::new(FaultConfig::new(0).rule(rule.clone())).unwrap_err();
        assert!(
            matches!(err, Error::InvalidArgument { name: "rule", .. }),
            "{err:?}"
        );
        assert!(machine(FaultConfig::new(0)).arm(rule).is_err());
    }
    let err = FaultStorage::new(FaultConfig::new(0).unsynced_survival(-0.1)).unwrap_err();
    assert!(matches!(err, Error::InvalidArgument { .. }));
}

#[test]
fn prefix_rules_and_disarm() {
    let s = machine(
        FaultConfig::new(1)
            .rule(FaultRule::probability(FaultKind::Eio, OpClass::Write, 1.0).on_files("log")),
    );
    let data = open(&s, "data");
    let log = open(&s, "log.0001");
    data.write_all_at(b"fine", 0).unwrap();
    assert!(log.write_all_at(b"fails", 0).is_err());
    s.disarm_all();
    log.write_all_at(b"fine", 0).unwrap();
}

#[test]
fn unsynced_survival_one_keeps_everything() {
    let s = machine(FaultConfig::new(1).unsynced_survival(1.0));
    let f = open(&s, "data");
    f.write_all_at(b"abcd", 0).unwrap();
    f.write_all_at(b"XY", 1).unwrap();
    s.crash_now();
    assert_eq!(s.durable_contents("data").unwrap(), b"aXYd");
}

#[test]
fn bad_offsets_are_errors_not_panics() {
    let s = machine(FaultConfig::new(1).max_file_bytes(1 << 20));
    let f = open(&s, "data");
    let mut buf = [0u8; 8];
    let eof = f.read_exact_at(&mut buf, 0).unwrap_err();
    assert!(
        matches!(&eof, Error::Io { source, .. } if source.kind() == std::io::ErrorKind::UnexpectedEof)
    );
    assert!(f.read_exact_at(&mut buf, u64::MAX).is_err());
    for err in [
        f.write_all_at(&buf, u64::MAX - 2).unwrap_err(),
        f.write_all_at(&buf, 1 << 20).unwrap_err(),
        f.set_len(u64::MAX).unwrap_err(),
    ] {
        assert_eq!(raw_os_error(&err), Some(libc::EFBIG), "{err:?}");
    }
    // Zero-length calls succeed anywhere, as with `FileExt`, and are not counted.
    let counts = s.op_counts();
    f.write_all_at(&[], u64::MAX - 100).unwrap();
    f.read_exact_at(&mut [], u64::MAX).unwrap();
    assert_eq!(s.op_counts(), counts);
    assert_eq!(f.len().unwrap(), 0);
}

#[test]
fn threads_can_share_the_machine() {
    let s = machine(FaultConfig::new(1));
    let f = open(&s, "data");
    std::thread::scope(|scope| {
        for t in 0..4u64 {
            let f = Arc::clone(&f);
            scope.spawn(move || {
                for i in 0..50u64 {
                    f.write_all_at(&[t as u8; 8], (t * 50 + i) * 8).unwrap();
                }
                f.sync_data().unwrap();
            });
        }
    });
    assert_eq!(s.durable_contents("data").unwrap().len(), 4 * 50 * 8);
}

#[derive(Debug, Clone)]
enum ModelOp {
    Write { offset: u64, len: usize, byte: u8 },
    SetLen(u64),
    Sync,
    Crash,
}

fn model_op() -> impl proptest::strategy::Strategy<Value = ModelOp> {
    use proptest::prelude::*;
    prop_oneof![
        4 => (0u64..6000, 0usize..1500, any::<u8>())
            .prop_map(|(offset, len, byte)| ModelOp::Write { offset, len, byte }),
        1 => (0u64..7000).prop_map(ModelOp::SetLen),
        2 => Just(ModelOp::Sync),
        1 => Just(ModelOp::Crash),
    ]
}

proptest::proptest! {
    /// Without injected faults the simulation matches a two-image model exactly (fault
    /// rules 1 and 2): reads see the volatile image, power loss leaves the durable one.
    #[test]
    fn matches_a_two_image_model(ops in proptest::collection::vec(model_op(), 1..60)) {
        let s = machine(FaultConfig::new(0));
        let mut f = open(&s, "m");
        let (mut volatile, mut durable) = (Vec::<u8>::new(), Vec::<u8>::new());
        for op in ops {
            match op {
                ModelOp::Write { offset, len, byte } => {
                    f.write_all_at(&vec![byte; len], offset).unwrap();
                    if len > 0 {
                        let end = offset as usize + len;
                        if volatile.len() < end {
                            volatile.resize(end, 0);
                        }
                        volatile[offset as usize..end].fill(byte);
                    }
                }
                ModelOp::SetLen(len) => {
                    f.set_len(len).unwrap();
                    volatile.resize(len as usize, 0);
                }
                ModelOp::Sync => {
                    f.sync_data().unwrap();
                    durable.clone_from(&volatile);
                }
                ModelOp::Crash => {
                    s.restart();
                    f = open(&s, "m");
                    volatile.clone_from(&durable);
                }
            }
            proptest::prop_assert_eq!(&s.contents("m").unwrap(), &volatile);
            proptest::prop_assert_eq!(&s.durable_contents("m").unwrap(), &durable);
            proptest::prop_assert_eq!(f.len().unwrap(), volatile.len() as u64);
        }
    }
}
