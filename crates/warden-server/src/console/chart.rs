//! Charts drawn on the server as SVG: no script draws them, and the page's style sheet colours
//! them (classes, never inline styles, which the console's CSP forbids).

use maud::{Markup, html};

/// One series of a stacked bar chart.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Series {
    pub(crate) name: &'static str,
    /// The CSS class of its bars and its legend swatch.
    pub(crate) class: &'static str,
}

const W: f64 = 720.0;
const H: f64 = 200.0;
const LEFT: f64 = 36.0;
const BOTTOM: f64 = 22.0;
const TOP: f64 = 8.0;

/// A round maximum for the axis at or above `max`.
fn nice(max: u64) -> u64 {
    let max = max.max(1);
    let mut step = 1;
    while step * 10 < max {
        step *= 10;
    }
    [1, 2, 5, 10]
        .into_iter()
        .map(|m| m * step)
        .find(|&top| top >= max)
        .unwrap_or(max)
}

/// The values the axis up to `top` (a [`nice`] one) is marked at: evenly spaced whole numbers
/// from 0 to `top`, four or five steps where `top` divides so (0, 1, 2, 3, 4, 5 for 5 — never
/// a skipped 4).
fn ticks(top: u64) -> Vec<u64> {
    let steps = [4, 5, 2, 1]
        .into_iter()
        .find(|k| top.is_multiple_of(*k))
        .unwrap_or(1);
    (0..=steps).map(|i| top / steps * i).collect()
}

/// Stacked bars, one per bucket (oldest first), each bucket one count per series; `labels`
/// are (bucket index, text) under the axis.
pub(crate) fn stacked_bars(
    title: &str,
    series: &[Series],
    buckets: &[Vec<u64>],
    labels: &[(usize, String)],
) -> Markup {
    let top = nice(buckets.iter().map(|b| b.iter().sum()).max().unwrap_or(0));
    let n = buckets.len().max(1) as f64;
    let plot_w = W - LEFT - 4.0;
    let plot_h = H - BOTTOM - TOP;
    let slot = plot_w / n;
    let bar = (slot * 0.8).max(1.0);
    let y_of = |v: u64| TOP + plot_h - (v as f64 / top as f64) * plot_h;
    let total: u64 = buckets.iter().flatten().sum();
    // Each non-zero count as a segment: its series, count, x, top and height.
    let mut segments = Vec::new();
    for (i, bucket) in buckets.iter().enumerate() {
        let x = LEFT + i as f64 * slot + (slot - bar) / 2.0;
        let mut base = 0u64;
        for (value, s) in bucket.iter().zip(series) {
            if *value > 0 {
                let (y0, y1) = (y_of(base), y_of(base + value));
                segments.push((s, *value, x, y1, (y0 - y1).max(0.5)));
            }
            base += value;
        }
    }
    html! {
        figure.chart {
            svg viewBox={ "0 0 " (W) " " (H) } role="img" aria-label=(format!("{title}: {total} in all")) {
                @for v in ticks(top) {
                    @let y = y_of(v);
                    line.grid x1=(LEFT) x2=(W - 4.0) y1=(y) y2=(y) {}
                    text.axis x=(LEFT - 4.0) y=(y + 4.0) text-anchor="end" { (v) }
                }
                @for (s, value, x, y, h) in &segments {
                    rect class=(s.class) x=(format!("{x:.1}")) y=(format!("{y:.1}")) width=(format!("{bar:.1}")) height=(format!("{h:.1}")) {
                        title { (s.name) ": " (value) }
                    }
                }
                @for (i, text) in labels {
                    text.axis x=(format!("{:.1}", LEFT + (*i as f64 + 0.5) * slot)) y=(H - 6.0) text-anchor="middle" { (text) }
                }
            }
            figcaption {
                (title)
                @for s in series {
                    " " span class={ "swatch " (s.class) } {} " " (s.name)
                }
            }
        }
    }
}

/// Horizontal bars, largest first, for a top-N list.
pub(crate) fn ranking(title: &str, class: &str, items: &[(String, u64)]) -> Markup {
    let top = items.iter().map(|(_, v)| *v).max().unwrap_or(0).max(1);
    // Narrower than the bar chart: drawn in a half-width panel, its text stays legible.
    const W: f64 = 480.0;
    let row = 24.0;
    let label_w = 170.0;
    let height = (items.len().max(1) as f64) * row + 4.0;
    html! {
        figure.chart.ranking {
            @if items.is_empty() {
                p.empty { "None in the last hour." }
            } @else {
                svg viewBox={ "0 0 " (W) " " (height) } role="img" aria-label=(title) {
                    @for (i, (label, value)) in items.iter().enumerate() {
                        @let y = i as f64 * row + 2.0;
                        @let w = (W - label_w - 40.0) * (*value as f64 / top as f64);
                        text.label x="0" y=(y + 16.0) { (super::fmt::cut(label, 24)) }
                        rect class=(class) x=(label_w) y=(y + 3.0) width=(format!("{:.1}", w.max(2.0))) height=(row - 8.0) {
                            title { (label) ": " (value) }
                        }
                        text.value x=(format!("{:.1}", label_w + w.max(2.0) + 6.0)) y=(y + 16.0) { (value) }
                    }
                }
            }
            figcaption { (title) }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn axes_end_on_round_numbers() {
        assert_eq!(
            [0, 1, 3, 7, 12, 51, 999].map(nice),
            [1, 1, 5, 10, 20, 100, 1000]
        );
    }

    #[test]
    fn a_chart_is_svg_with_one_bar_segment_per_nonzero_count_and_no_inline_style() {
        let series = [
            Series {
                name: "allowed",
                class: "s-allow",
            },
            Series {
                name: "denied",
                class: "s-deny",
            },
        ];
        let svg = stacked_bars(
            "Calls",
            &series,
            &[vec![1, 0], vec![2, 3]],
            &[(0, "-1m".into())],
        )
        .into_string();
        assert_eq!(svg.matches("<rect").count(), 3, "{svg}");
        assert!(svg.contains("aria-label=\"Calls: 6 in all\""), "{svg}");
        assert!(!svg.contains("style="), "{svg}");
    }

    /// Issue 45 (observed: the Overview chart's y axis read 0, 1, 2, 3, 5).
    #[test]
    fn the_axis_is_marked_at_even_whole_steps() {
        assert_eq!(ticks(nice(5)), vec![0, 1, 2, 3, 4, 5]);
        assert_eq!(ticks(nice(7)), vec![0, 2, 4, 6, 8, 10]);
        assert_eq!(ticks(nice(2)), vec![0, 1, 2]);
        assert_eq!(ticks(nice(0)), vec![0, 1]);
        for max in 0..5000 {
            let top = nice(max);
            let t = ticks(top);
            let step = t[1] - t[0];
            assert!(t.windows(2).all(|w| w[1] - w[0] == step), "{max}: {t:?}");
            assert_eq!(*t.last().unwrap(), top, "{max}: {t:?}");
        }
    }
}
