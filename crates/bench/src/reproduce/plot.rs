//! Drawing a [`Figure`] as a PNG with `plotters` (bitmap backend). Text is drawn with
//! ab_glyph from the DejaVu Sans font file of the Debian package `fonts-dejavu-core`, so no
//! fontconfig is needed at run time.
//!
//! Logarithmic axes are drawn by plotting log10 of the values on a linear axis whose labels
//! show the values again; categorical x axes plot the category index and label it by name.

use super::figure::{Figure, Kind};
use plotters::prelude::*;
use std::path::Path;
use std::sync::OnceLock;

/// Where the font is looked for, first match wins (`LINERATE_FONT` overrides).
const FONT_PATHS: [&str; 2] =
    ["/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf", "/usr/share/fonts/dejavu/DejaVuSans.ttf"];

/// Picture size in pixels.
pub const SIZE: (u32, u32) = (1000, 620);

/// Line and marker colours of the series, in order.
const COLOURS: [RGBColor; 8] = [
    RGBColor(31, 119, 180),
    RGBColor(214, 39, 40),
    RGBColor(44, 160, 44),
    RGBColor(255, 127, 14),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(23, 190, 207),
    RGBColor(227, 119, 194),
];

/// Register the font with plotters once; the error is one sentence naming the package.
pub fn ensure_font() -> Result<(), String> {
    static FONT: OnceLock<Result<(), String>> = OnceLock::new();
    FONT.get_or_init(|| {
        let candidates: Vec<String> = match std::env::var("LINERATE_FONT") {
            Ok(p) => vec![p],
            Err(_) => FONT_PATHS.iter().map(|s| s.to_string()).collect(),
        };
        let Some((path, bytes)) = candidates.iter().find_map(|p| std::fs::read(p).ok().map(|b| (p, b))) else {
            return Err(format!(
                "plotting needs the DejaVu Sans font ({}), which the Debian package fonts-dejavu-core installs \
                 (make setup-system); it was not found",
                candidates.join(" or ")
            ));
        };
        // plotters keeps fonts for the life of the process.
        let bytes: &'static [u8] = Box::leak(bytes.into_boxed_slice());
        plotters::style::register_font("sans-serif", FontStyle::Normal, bytes)
            .map_err(|_| format!("{path} is not a usable TrueType font"))
    })
    .clone()
}

/// `v` on an axis that is logarithmic when `log`.
fn tx(v: f64, log: bool) -> f64 {
    if log {
        v.max(1e-300).log10()
    } else {
        v
    }
}

/// A short label for an axis value.
fn short(v: f64) -> String {
    let a = v.abs();
    if a == 0.0 {
        "0".into()
    } else if a >= 1e9 {
        format!("{:.3}G", v / 1e9)
    } else if a >= 1e6 {
        format!("{:.3}M", v / 1e6)
    } else if a >= 1e4 {
        format!("{:.3}k", v / 1e3)
    } else if a >= 100.0 || v.fract() == 0.0 {
        format!("{v:.0}")
    } else if a >= 1.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.3}")
    }
    .replace(".000", "")
}

/// `v` rounded to two significant digits (labels of logarithmic axes).
fn two_digits(v: f64) -> f64 {
    if v <= 0.0 || !v.is_finite() {
        return v;
    }
    let p = 10f64.powf(v.log10().floor() - 1.0);
    (v / p).round() * p
}

/// The (low, high) of the values, padded by 6% (and at least a little).
fn padded(vals: impl Iterator<Item = f64>, from_zero: bool) -> (f64, f64) {
    let (mut lo, mut hi) = vals.filter(|v| v.is_finite()).fold((f64::MAX, f64::MIN), |(a, b), v| (a.min(v), b.max(v)));
    if lo > hi {
        (lo, hi) = (0.0, 1.0);
    }
    if from_zero && lo > 0.0 {
        lo = 0.0;
    }
    let pad = ((hi - lo) * 0.06).max(hi.abs() * 0.02).max(1e-9);
    (if from_zero && lo == 0.0 { 0.0 } else { lo - pad }, hi + pad)
}

/// [`padded`] with room for the legend above the highest value.
fn with_headroom(vals: impl Iterator<Item = f64>, from_zero: bool) -> (f64, f64) {
    let (lo, hi) = padded(vals, from_zero);
    (lo, hi + (hi - lo) * 0.3)
}

/// Draw `fig` to the PNG file `path`.
pub fn draw(fig: &Figure, path: &Path) -> Result<(), String> {
    ensure_font()?;
    let e = |what: &str, x: &dyn std::fmt::Debug| format!("plot {}: {what}: {x:?}", path.display());
    let cat = !fig.categories.is_empty();
    let (xl, yl) = (fig.x.log && !cat, fig.y.log);
    let points = || fig.series.iter().flat_map(|s| s.points.iter());
    let (x0, x1) =
        if cat { (-0.5, fig.categories.len() as f64 - 0.5) } else { padded(points().map(|p| tx(p.x, xl)), false) };
    let ys = points().flat_map(|p| {
        let sd = p.sd.unwrap_or(0.0);
        [tx(p.y, yl), tx((p.y + sd).max(p.y), yl)]
    });
    let (y0, y1) = with_headroom(ys, !yl);
    let root = BitMapBackend::new(path, SIZE).into_drawing_area();
    root.fill(&WHITE).map_err(|x| e("fill", &x))?;
    let title = format!("{} {}: {}", fig.paper, fig.name, fig.title);
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 20))
        .margin(14)
        .x_label_area_size(48)
        .y_label_area_size(72)
        .build_cartesian_2d(x0..x1, y0..y1)
        .map_err(|x| e("axes", &x))?;
    let cats = fig.categories.clone();
    let xfmt = move |v: &f64| {
        if cat {
            let i = v.round();
            if (v - i).abs() < 0.01 && i >= 0.0 {
                cats.get(i as usize).cloned().unwrap_or_default()
            } else {
                String::new()
            }
        } else if xl {
            short(two_digits(10f64.powf(*v)))
        } else {
            short(*v)
        }
    };
    let yfmt = move |v: &f64| if yl { short(two_digits(10f64.powf(*v))) } else { short(*v) };
    let mut mesh = chart.configure_mesh();
    mesh.x_desc(fig.x.caption())
        .y_desc(fig.y.caption())
        .x_label_formatter(&xfmt)
        .y_label_formatter(&yfmt)
        .label_style(("sans-serif", 14))
        .axis_desc_style(("sans-serif", 16));
    if cat {
        mesh.x_labels(fig.categories.len() * 4 + 1).disable_x_mesh();
    }
    mesh.draw().map_err(|x| e("mesh", &x))?;
    for (i, s) in fig.series.iter().enumerate() {
        let colour = match s.kind {
            Kind::Paper => RGBColor(0, 0, 0),
            Kind::Theory => RGBColor(120, 120, 120),
            _ => COLOURS[i % COLOURS.len()],
        };
        let pts: Vec<(f64, f64)> = s.points.iter().map(|p| (tx(p.x, xl), tx(p.y, yl))).collect();
        let legend = match s.kind {
            Kind::Paper => format!("paper: {}", s.name),
            _ => s.name.clone(),
        };
        match s.kind {
            Kind::Paper => {
                chart
                    .draw_series(pts.iter().map(|&p| TriangleMarker::new(p, 9, colour.filled())))
                    .map_err(|x| e("series", &x))?
                    .label(legend)
                    .legend(move |(x, y)| TriangleMarker::new((x + 10, y), 6, colour.filled()));
            }
            Kind::Theory => {
                chart
                    .draw_series(LineSeries::new(pts.clone(), colour.stroke_width(1)))
                    .map_err(|x| e("series", &x))?
                    .label(legend)
                    .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], colour.stroke_width(1)));
            }
            Kind::Linerate | Kind::Peer => {
                let line = if cat { 0 } else { 2 };
                if line > 0 && pts.len() > 1 {
                    chart
                        .draw_series(LineSeries::new(pts.clone(), colour.stroke_width(line)))
                        .map_err(|x| e("series", &x))?;
                }
                let key = move |(x, y): (i32, i32)| PathElement::new(vec![(x, y), (x + 20, y)], colour.stroke_width(2));
                if s.kind == Kind::Peer {
                    let square =
                        |p: (f64, f64)| EmptyElement::at(p) + Rectangle::new([(-4, -4), (4, 4)], colour.filled());
                    chart
                        .draw_series(pts.iter().map(|&p| square(p)))
                        .map_err(|x| e("series", &x))?
                        .label(legend)
                        .legend(key);
                } else {
                    chart
                        .draw_series(pts.iter().map(|&p| Circle::new(p, 4, colour.filled())))
                        .map_err(|x| e("series", &x))?
                        .label(legend)
                        .legend(key);
                }
                // Standard deviations as vertical bars.
                let bars: Vec<PathElement<(f64, f64)>> = s
                    .points
                    .iter()
                    .filter_map(|p| p.sd.filter(|sd| *sd > 0.0).map(|sd| (p, sd)))
                    .map(|(p, sd)| {
                        let x = tx(p.x, xl);
                        let lo = if yl { tx((p.y - sd).max(p.y * 0.01), yl) } else { p.y - sd };
                        PathElement::new(vec![(x, lo), (x, tx(p.y + sd, yl))], colour.stroke_width(1))
                    })
                    .collect();
                chart.draw_series(bars).map_err(|x| e("series", &x))?;
            }
        }
    }
    if !fig.series.is_empty() {
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .label_font(("sans-serif", 13))
            .position(SeriesLabelPosition::UpperLeft)
            .draw()
            .map_err(|x| e("legend", &x))?;
    }
    root.present().map_err(|x| e("write", &x))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reproduce::figure::{Axis, Point, Series};

    #[test]
    fn labels_are_short() {
        assert_eq!(short(1500.0), "1500");
        assert_eq!(short(65536.0), "65.536k");
        assert_eq!(short(1e9), "1G");
        assert_eq!(short(2.5), "2.50");
        assert_eq!(short(10.0), "10");
        assert_eq!(short(0.0), "0");
        assert_eq!(short(two_digits(31_623.0)), "32k");
        assert_eq!(short(two_digits(316.2)), "320");
    }

    #[test]
    fn ranges_are_padded_and_start_at_zero_on_request() {
        assert_eq!(padded([2.0, 4.0].into_iter(), true).0, 0.0);
        let (lo, hi) = padded([2.0, 4.0].into_iter(), false);
        assert!(lo < 2.0 && hi > 4.0);
        assert_eq!(padded(std::iter::empty(), false), (-0.06, 1.06));
    }

    #[test]
    fn draws_a_png_with_every_kind_of_series() {
        if let Err(e) = ensure_font() {
            panic!("{e}");
        }
        let mut f =
            Figure::new("000", "t", "Fig. 3", "test", Axis::log("payload", "B"), Axis::lin("goodput", "Gbit/s"));
        let mut s = Series::new("linerate", Kind::Linerate, &[(1024.0, 3.0), (8192.0, 9.0)], "run");
        s.points[0].sd = Some(0.5);
        f.add(s);
        f.add(Series::new("Linux", Kind::Peer, &[(1024.0, 2.0), (8192.0, 5.0)], "run"));
        f.add(Series::new("Eq. (2)", Kind::Theory, &[(1024.0, 90.0), (8192.0, 99.0)], "Eq. (2)"));
        f.add(Series {
            name: "Sec. V".into(),
            kind: Kind::Paper,
            points: vec![Point { x: 4096.0, y: 98.1, sd: None }],
            source: "V".into(),
        });
        let dir = std::env::temp_dir().join(format!("lr-plot-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("t.png");
        draw(&f, &p).unwrap();
        let bytes = std::fs::read(&p).unwrap();
        assert_eq!(&bytes[1..4], b"PNG");
        let mut c = f.clone();
        c.categories = vec!["UDP".into(), "TCP".into()];
        c.series.iter_mut().for_each(|s| s.points.iter_mut().enumerate().for_each(|(i, p)| p.x = i as f64));
        draw(&c, &dir.join("c.png")).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
