//! The instruction sets the datapath's hot loops are compiled for, and the choice among them
//! at run time.
//!
//! The crate is built for the x86-64 baseline, so one binary runs on any 64-bit x86 CPU (a
//! white-box switch's Atom as well as a server). The batch pipeline and the classifier's
//! batch lookup are compiled a second time for x86-64-v3 (AVX2, BMI1/2, LZCNT, POPCNT, FMA,
//! MOVBE: Intel since Haswell, AMD since Excavator), whose variable shifts and bit counts
//! save instructions on every packet; a reader runs that copy when its CPU has the features.

/// The compiled copies of the hot loops a reader can run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Isa {
    /// The x86-64 baseline (or another architecture's default).
    Baseline,
    /// x86-64-v3; only returned by [`Isa::detect`] on a CPU that has it.
    X86_64V3,
}

impl Isa {
    /// The best copy this CPU can run.
    pub fn detect() -> Isa {
        #[cfg(target_arch = "x86_64")]
        {
            let v3 = std::is_x86_feature_detected!("avx2")
                && std::is_x86_feature_detected!("bmi1")
                && std::is_x86_feature_detected!("bmi2")
                && std::is_x86_feature_detected!("fma")
                && std::is_x86_feature_detected!("lzcnt")
                && std::is_x86_feature_detected!("movbe")
                && std::is_x86_feature_detected!("popcnt");
            if v3 {
                return Isa::X86_64V3;
            }
        }
        Isa::Baseline
    }

    /// `self` if this CPU can run it, else the baseline: what a reader asked for `self` runs.
    pub fn or_baseline(self) -> Isa {
        match self {
            Isa::X86_64V3 if Isa::detect() == Isa::X86_64V3 => Isa::X86_64V3,
            _ => Isa::Baseline,
        }
    }
}

/// Compiles a function item for x86-64-v3 (the feature list of [`Isa::X86_64V3`], which
/// [`Isa::detect`] checks). Calling it is sound only where `Isa::detect` returned
/// `X86_64V3`.
macro_rules! x86_64_v3 {
    ($item:item) => {
        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = "avx,avx2,bmi1,bmi2,fma,lzcnt,movbe,popcnt")]
        $item
    };
}

pub(crate) use x86_64_v3;
