//! Univariate leaf distributions: their densities, their checks and their bounds.
//!
//! A missing input (NaN) marginalises the variable out: every leaf then has likelihood 1, the
//! integral of a normalised distribution over its whole domain.

/// Tolerance on "sums to one" for probabilities, weights and histogram masses.
pub const NORMALISATION_TOLERANCE: f64 = 1e-6;

/// Largest number of categories of a categorical leaf (the 8-bit input domain).
pub const MAX_CATEGORIES: usize = 256;

/// Largest number of bins of a histogram leaf.
pub const MAX_BINS: usize = 65_536;

/// A univariate distribution over one input variable.
#[derive(Debug, Clone, PartialEq)]
pub enum Leaf {
    /// P(x = k) = `probs[k]` for integer k in `0..probs.len()`, 0 for any other value.
    Categorical {
        /// Probability of each category (at most 256, summing to 1).
        probs: Vec<f64>,
    },
    /// A piecewise-constant density: `densities[i]` on `[breaks[i], breaks[i+1])`, 0 outside
    /// `[breaks[0], breaks[last])` (SPFlow's histogram; integer breaks make it a distribution
    /// over 8-bit values).
    Histogram {
        /// Strictly increasing, finite bin edges (at least two).
        breaks: Vec<f64>,
        /// Density of each bin (one fewer than `breaks`); the masses `density × width` sum to 1.
        densities: Vec<f64>,
    },
    /// The normal density with mean `mean` and standard deviation `stdev`.
    Gaussian {
        /// Mean.
        mean: f64,
        /// Standard deviation (positive).
        stdev: f64,
    },
    /// P(x = 1) = `p`, P(x = 0) = 1 - `p`, 0 for any other value.
    Bernoulli {
        /// Probability of a one.
        p: f64,
    },
}

/// ln(sqrt(2π)).
const LN_SQRT_2PI: f64 = 0.918_938_533_204_672_8;

impl Leaf {
    /// The kind of leaf as written in the JSON format ("categorical", "histogram", ...).
    pub fn kind(&self) -> &'static str {
        match self {
            Leaf::Categorical { .. } => "categorical",
            Leaf::Histogram { .. } => "histogram",
            Leaf::Gaussian { .. } => "gaussian",
            Leaf::Bernoulli { .. } => "bernoulli",
        }
    }

    /// The likelihood of `x` (1 if `x` is NaN: the variable is marginalised out).
    pub fn prob(&self, x: f64) -> f64 {
        if x.is_nan() {
            return 1.0;
        }
        match self {
            Leaf::Categorical { probs } => match as_index(x) {
                Some(k) if k < probs.len() => probs[k],
                _ => 0.0,
            },
            Leaf::Histogram { breaks, densities } => histogram_bin(breaks, x).map_or(0.0, |i| densities[i]),
            Leaf::Gaussian { mean, stdev } => self.log_prob_gaussian(x, *mean, *stdev).exp(),
            Leaf::Bernoulli { p } => {
                if x == 1.0 {
                    *p
                } else if x == 0.0 {
                    1.0 - *p
                } else {
                    0.0
                }
            }
        }
    }

    /// The log-likelihood of `x` (0 if `x` is NaN, -inf where the likelihood is 0).
    pub fn log_prob(&self, x: f64) -> f64 {
        match self {
            Leaf::Gaussian { mean, stdev } if !x.is_nan() => self.log_prob_gaussian(x, *mean, *stdev),
            _ => self.prob(x).ln(),
        }
    }

    fn log_prob_gaussian(&self, x: f64, mean: f64, stdev: f64) -> f64 {
        let z = (x - mean) / stdev;
        -0.5 * z * z - stdev.ln() - LN_SQRT_2PI
    }

    /// An upper bound of the likelihood over all inputs, missing ones included (so at least 1).
    pub fn max_prob(&self) -> f64 {
        let m = match self {
            Leaf::Categorical { probs } => probs.iter().cloned().fold(0.0, f64::max),
            Leaf::Histogram { densities, .. } => densities.iter().cloned().fold(0.0, f64::max),
            Leaf::Gaussian { stdev, .. } => (-stdev.ln() - LN_SQRT_2PI).exp(),
            Leaf::Bernoulli { p } => p.max(1.0 - p),
        };
        m.max(1.0)
    }

    /// Check the parameters; the error says which one is wrong and why.
    pub fn check(&self) -> Result<(), String> {
        match self {
            Leaf::Categorical { probs } => {
                if probs.is_empty() || probs.len() > MAX_CATEGORIES {
                    return Err(format!(
                        "categorical leaf has {} categories (1..={MAX_CATEGORIES} allowed)",
                        probs.len()
                    ));
                }
                check_values("categorical probability", probs, 1.0)?;
                check_total("categorical probabilities", probs.iter().sum())
            }
            Leaf::Histogram { breaks, densities } => {
                if breaks.len() < 2 || breaks.len() > MAX_BINS + 1 {
                    return Err(format!("histogram has {} breaks (2..={} allowed)", breaks.len(), MAX_BINS + 1));
                }
                if densities.len() + 1 != breaks.len() {
                    return Err(format!(
                        "histogram has {} breaks but {} densities (need one density per bin: {})",
                        breaks.len(),
                        densities.len(),
                        breaks.len() - 1
                    ));
                }
                if let Some(i) = breaks.iter().position(|b| !b.is_finite()) {
                    return Err(format!("histogram break {i} is {} (must be finite)", breaks[i]));
                }
                if let Some(i) = breaks.windows(2).position(|w| w[1] <= w[0]) {
                    return Err(format!(
                        "histogram breaks must increase strictly, but break {} = {} follows {}",
                        i + 1,
                        breaks[i + 1],
                        breaks[i]
                    ));
                }
                check_values("histogram density", densities, f64::INFINITY)?;
                let mass: f64 = densities.iter().zip(breaks.windows(2)).map(|(d, w)| d * (w[1] - w[0])).sum();
                check_total("histogram masses (density × bin width)", mass)
            }
            Leaf::Gaussian { mean, stdev } => {
                if !mean.is_finite() {
                    return Err(format!("gaussian mean is {mean} (must be finite)"));
                }
                if !(stdev.is_finite() && *stdev > 0.0) {
                    return Err(format!("gaussian stdev is {stdev} (must be finite and > 0)"));
                }
                if *stdev < 1e-300 {
                    return Err(format!("gaussian stdev {stdev} is too small to evaluate (must be >= 1e-300)"));
                }
                Ok(())
            }
            Leaf::Bernoulli { p } => {
                if !(0.0..=1.0).contains(p) {
                    return Err(format!("bernoulli p is {p} (must be in [0, 1])"));
                }
                Ok(())
            }
        }
    }
}

/// `x` as a non-negative integer index, if it is one.
fn as_index(x: f64) -> Option<usize> {
    (x >= 0.0 && x.fract() == 0.0 && x < 4_294_967_296.0).then_some(x as usize)
}

/// The bin of `x` (`breaks[i] <= x < breaks[i+1]`), if `x` is inside the histogram's support.
pub(crate) fn histogram_bin(breaks: &[f64], x: f64) -> Option<usize> {
    let last = *breaks.last()?;
    if !(x >= breaks[0] && x < last) {
        return None;
    }
    // Number of breaks <= x, minus one (bisect right).
    Some(breaks.partition_point(|b| *b <= x) - 1)
}

/// Every value finite and in `[0, upper]`.
fn check_values(what: &str, values: &[f64], upper: f64) -> Result<(), String> {
    for (i, v) in values.iter().enumerate() {
        if !(v.is_finite() && *v >= 0.0 && *v <= upper) {
            let range = if upper.is_finite() { format!("in [0, {upper}]") } else { "finite and >= 0".to_string() };
            return Err(format!("{what} {i} is {v} (must be {range})"));
        }
    }
    Ok(())
}

/// `total` within [`NORMALISATION_TOLERANCE`] of 1.
fn check_total(what: &str, total: f64) -> Result<(), String> {
    if (total - 1.0).abs() > NORMALISATION_TOLERANCE {
        return Err(format!("{what} sum to {total}, not 1 (tolerance {NORMALISATION_TOLERANCE})"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn densities_and_marginals() {
        let h = Leaf::Histogram { breaks: vec![0.0, 1.0, 3.0], densities: vec![0.5, 0.25] };
        assert_eq!(h.check(), Ok(()));
        assert_eq!(h.prob(0.0), 0.5);
        assert_eq!(h.prob(2.5), 0.25);
        assert_eq!(h.prob(3.0), 0.0);
        assert_eq!(h.prob(-0.1), 0.0);
        assert_eq!(h.prob(f64::NAN), 1.0);
        let c = Leaf::Categorical { probs: vec![0.25, 0.75] };
        assert_eq!(c.prob(1.0), 0.75);
        assert_eq!(c.prob(1.5), 0.0);
        assert_eq!(c.prob(2.0), 0.0);
        assert_eq!(c.log_prob(f64::NAN), 0.0);
        let g = Leaf::Gaussian { mean: 1.0, stdev: 2.0 };
        let want = (-0.5 * 0.25f64).exp() / (2.0 * (2.0 * std::f64::consts::PI).sqrt());
        assert!((g.prob(2.0) - want).abs() < 1e-16);
        let b = Leaf::Bernoulli { p: 0.25 };
        assert_eq!((b.prob(0.0), b.prob(1.0), b.prob(2.0)), (0.75, 0.25, 0.0));
    }

    #[test]
    fn checks_name_the_problem() {
        let e = Leaf::Histogram { breaks: vec![0.0, 2.0, 1.0], densities: vec![0.5, 0.5] }.check().unwrap_err();
        assert!(e.contains("increase strictly"), "{e}");
        let e = Leaf::Categorical { probs: vec![0.5, 0.6] }.check().unwrap_err();
        assert!(e.contains("sum to 1.1"), "{e}");
        let e = Leaf::Gaussian { mean: 0.0, stdev: 0.0 }.check().unwrap_err();
        assert!(e.contains("stdev"), "{e}");
        let e = Leaf::Bernoulli { p: f64::NAN }.check().unwrap_err();
        assert!(e.contains("bernoulli"), "{e}");
        let e = Leaf::Histogram { breaks: vec![0.0, 1.0], densities: vec![-1.0] }.check().unwrap_err();
        assert!(e.contains(">= 0"), "{e}");
    }
}
