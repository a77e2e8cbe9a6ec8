//! PNG line charts for learning curves and mixture trajectories (plotters, bitmap backend).
//!
//! The font (DejaVu Sans, `crates/rl-lab/assets/DejaVuSans.ttf`, licence in `assets/DejaVu-LICENSE` beside it) is embedded so
//! that plots render the same on a machine without fontconfig or system fonts.
//!
//! ```no_run
//! use rl_lab::plot::{save_png, Panel, Series};
//! let panel = Panel::new("held-out accuracy", "step", "accuracy")
//!     .with_series(Series::new("da3po", vec![(0.0, 0.1), (10.0, 0.4)]));
//! save_png(std::path::Path::new("curve.png"), &[panel], 1).unwrap();
//! ```

use std::path::Path;
use std::sync::Once;

use plotters::prelude::*;
use plotters::style::FontStyle;

static FONT: &[u8] = include_bytes!("../assets/DejaVuSans.ttf");
static REGISTER: Once = Once::new();

const PALETTE: [RGBColor; 10] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
    RGBColor(188, 189, 34),
    RGBColor(23, 190, 207),
];

/// Errors while drawing or writing a plot.
#[derive(Debug, thiserror::Error)]
pub enum PlotError {
    /// Nothing to draw.
    #[error("plot `{0}` has no finite points")]
    Empty(String),
    /// The layout asked for is impossible.
    #[error("invalid plot layout: {0}")]
    Layout(String),
    /// plotters failed (I/O, encoding, font).
    #[error("drawing {path}: {message}")]
    Draw {
        /// Output file.
        path: String,
        /// The backend's message.
        message: String,
    },
}

/// One named curve, optionally with a shaded band (for example mean ± std over seeds).
#[derive(Clone, Debug)]
pub struct Series {
    /// Legend label.
    pub name: String,
    /// (x, y) points in drawing order.
    pub points: Vec<(f64, f64)>,
    /// Optional (x, low, high) band drawn behind the curve.
    pub band: Option<Vec<(f64, f64, f64)>>,
    /// Optional (x, low, high) error bars (for example a 95 % confidence interval per point),
    /// drawn as capped vertical segments, with a marker at each point.
    pub bars: Option<Vec<(f64, f64, f64)>>,
}

impl Series {
    /// A curve without a band.
    pub fn new(name: impl Into<String>, points: Vec<(f64, f64)>) -> Self {
        Self {
            name: name.into(),
            points,
            band: None,
            bars: None,
        }
    }

    /// Adds a (x, low, high) band.
    pub fn with_band(mut self, band: Vec<(f64, f64, f64)>) -> Self {
        self.band = Some(band);
        self
    }

    /// Adds (x, low, high) error bars and point markers.
    pub fn with_error_bars(mut self, bars: Vec<(f64, f64, f64)>) -> Self {
        self.bars = Some(bars);
        self
    }
}

/// One chart: axes, labels and its curves.
#[derive(Clone, Debug)]
pub struct Panel {
    /// Title drawn above the chart.
    pub title: String,
    /// X axis label.
    pub x_label: String,
    /// Y axis label.
    pub y_label: String,
    /// Curves.
    pub series: Vec<Series>,
    /// Fixed y range instead of fitting the data.
    pub y_range: Option<(f64, f64)>,
}

impl Panel {
    /// An empty panel.
    pub fn new(
        title: impl Into<String>,
        x_label: impl Into<String>,
        y_label: impl Into<String>,
    ) -> Self {
        Self {
            title: title.into(),
            x_label: x_label.into(),
            y_label: y_label.into(),
            series: Vec::new(),
            y_range: None,
        }
    }

    /// Adds a curve.
    pub fn with_series(mut self, series: Series) -> Self {
        self.series.push(series);
        self
    }

    /// Fixes the y range.
    pub fn with_y_range(mut self, lo: f64, hi: f64) -> Self {
        self.y_range = Some((lo, hi));
        self
    }

    fn bounds(&self) -> Option<((f64, f64), (f64, f64))> {
        let mut xs = (f64::INFINITY, f64::NEG_INFINITY);
        let mut ys = (f64::INFINITY, f64::NEG_INFINITY);
        let mut see = |x: f64, y: f64| {
            if x.is_finite() && y.is_finite() {
                xs = (xs.0.min(x), xs.1.max(x));
                ys = (ys.0.min(y), ys.1.max(y));
            }
        };
        for s in &self.series {
            for &(x, y) in &s.points {
                see(x, y);
            }
            for &(x, lo, hi) in s.band.iter().flatten().chain(s.bars.iter().flatten()) {
                see(x, lo);
                see(x, hi);
            }
        }
        if !xs.0.is_finite() {
            return None;
        }
        if let Some(r) = self.y_range {
            ys = r;
        }
        // Error bars at the first and last x would sit on the frame: leave them room.
        let x_pad = if self.series.iter().any(|s| s.bars.is_some()) {
            0.05
        } else {
            0.0
        };
        Some((pad(xs, x_pad), pad(ys, 0.05)))
    }
}

fn pad((lo, hi): (f64, f64), frac: f64) -> (f64, f64) {
    if hi - lo < 1e-12 {
        let d = if lo.abs() > 1e-12 {
            lo.abs() * 0.1
        } else {
            1.0
        };
        (lo - d, hi + d)
    } else {
        let d = (hi - lo) * frac;
        (lo - d, hi + d)
    }
}

fn draw_err(path: &Path, e: impl std::fmt::Display) -> PlotError {
    PlotError::Draw {
        path: path.display().to_string(),
        message: e.to_string(),
    }
}

/// Draws `panels` in a grid with `cols` columns into a PNG at `path` (about 640×420 px per panel).
pub fn save_png(path: &Path, panels: &[Panel], cols: usize) -> Result<(), PlotError> {
    if panels.is_empty() || cols == 0 {
        return Err(PlotError::Layout(format!(
            "{} panels in {cols} columns",
            panels.len()
        )));
    }
    REGISTER.call_once(|| {
        // The embedded font is valid; if registration failed, text would be skipped, not panic.
        let _ = plotters::style::register_font("sans-serif", FontStyle::Normal, FONT);
    });
    let cols = cols.min(panels.len());
    let rows = panels.len().div_ceil(cols);
    let (w, h) = (640 * cols as u32, 420 * rows as u32);
    let root = BitMapBackend::new(path, (w, h)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| draw_err(path, e))?;
    let areas = root.split_evenly((rows, cols));
    for (panel, area) in panels.iter().zip(areas.iter()) {
        draw_panel(path, panel, area)?;
    }
    root.present().map_err(|e| draw_err(path, e))?;
    Ok(())
}

fn draw_panel(
    path: &Path,
    panel: &Panel,
    area: &DrawingArea<BitMapBackend<'_>, plotters::coord::Shift>,
) -> Result<(), PlotError> {
    let ((x0, x1), (y0, y1)) = panel
        .bounds()
        .ok_or_else(|| PlotError::Empty(panel.title.clone()))?;
    let mut chart = ChartBuilder::on(area)
        .caption(&panel.title, ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(x0..x1, y0..y1)
        .map_err(|e| draw_err(path, e))?;
    chart
        .configure_mesh()
        .x_desc(panel.x_label.as_str())
        .y_desc(panel.y_label.as_str())
        .label_style(("sans-serif", 13))
        .light_line_style(RGBColor(235, 235, 235))
        .draw()
        .map_err(|e| draw_err(path, e))?;
    for (i, s) in panel.series.iter().enumerate() {
        let color = PALETTE[i % PALETTE.len()];
        if let Some(band) = &s.band {
            let mut poly: Vec<(f64, f64)> = band
                .iter()
                .filter(|p| p.0.is_finite() && p.1.is_finite())
                .map(|&(x, lo, _)| (x, lo))
                .collect();
            poly.extend(
                band.iter()
                    .rev()
                    .filter(|p| p.0.is_finite() && p.2.is_finite())
                    .map(|&(x, _, hi)| (x, hi)),
            );
            if poly.len() >= 3 {
                chart
                    .draw_series(std::iter::once(Polygon::new(
                        poly,
                        color.mix(0.18).filled(),
                    )))
                    .map_err(|e| draw_err(path, e))?;
            }
        }
        let pts: Vec<(f64, f64)> = s
            .points
            .iter()
            .copied()
            .filter(|(x, y)| x.is_finite() && y.is_finite())
            .collect();
        chart
            .draw_series(LineSeries::new(pts, color.stroke_width(2)))
            .map_err(|e| draw_err(path, e))?
            .label(s.name.as_str())
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 18, y)], color.stroke_width(2))
            });
        if let Some(bars) = &s.bars {
            // Caps 1 % of the x range wide on each side.
            let cap = (x1 - x0) * 0.01;
            let bars: Vec<(f64, f64, f64)> = bars
                .iter()
                .copied()
                .filter(|&(x, lo, hi)| x.is_finite() && lo.is_finite() && hi.is_finite())
                .collect();
            let segments = bars.iter().flat_map(|&(x, lo, hi)| {
                [
                    vec![(x, lo), (x, hi)],
                    vec![(x - cap, lo), (x + cap, lo)],
                    vec![(x - cap, hi), (x + cap, hi)],
                ]
            });
            chart
                .draw_series(segments.map(|seg| PathElement::new(seg, color.stroke_width(2))))
                .map_err(|e| draw_err(path, e))?;
            chart
                .draw_series(
                    s.points
                        .iter()
                        .filter(|(x, y)| x.is_finite() && y.is_finite())
                        .map(|&p| Circle::new(p, 4, color.filled())),
                )
                .map_err(|e| draw_err(path, e))?;
        }
    }
    if panel.series.iter().any(|s| !s.name.is_empty()) {
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.85))
            .border_style(RGBColor(200, 200, 200))
            .label_font(("sans-serif", 13))
            .position(SeriesLabelPosition::UpperLeft)
            .draw()
            .map_err(|e| draw_err(path, e))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_a_png_with_two_panels() {
        let tmpdir = tempfile::Builder::new()
            .prefix("rlvr-plot-")
            .tempdir()
            .unwrap();
        let dir = tmpdir.path();
        let path = dir.join("p.png");
        let a = Panel::new("a", "step", "y").with_series(
            Series::new("s", vec![(0.0, 1.0), (1.0, 2.0), (2.0, 1.5)]).with_band(vec![
                (0.0, 0.5, 1.5),
                (1.0, 1.5, 2.5),
                (2.0, 1.0, 2.0),
            ]),
        );
        let b = Panel::new("b", "step", "y").with_series(
            Series::new("t", vec![(0.0, 3.0), (5.0, 3.0)])
                .with_error_bars(vec![(0.0, 2.0, 4.0), (5.0, f64::NAN, 3.5)]),
        );
        // The error bars widen the fitted y range (2.0..4.0) and pad both ranges by 5 %.
        assert_eq!(b.bounds(), Some(((-0.25, 5.25), (1.9, 4.1))));
        save_png(&path, &[a, b], 2).unwrap();
        let bytes = std::fs::read(&path).unwrap();
        assert_eq!(&bytes[1..4], b"PNG");
        let empty = Panel::new("e", "x", "y").with_series(Series::new("n", vec![(f64::NAN, 1.0)]));
        assert!(matches!(
            save_png(&path, &[empty], 1),
            Err(PlotError::Empty(_))
        ));
    }
}
