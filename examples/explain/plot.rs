//! The `explain` story's plot: time per batch against batch size, log-log, per device and P
//! count, with the crossovers n* marked and a scattered batch drawn per network link (plotters, SVG).

use super::*;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// Seconds for an axis tick: `100 s`, `10 ms`, `1 µs` (no trailing zeros).
fn tick_secs(s: f64) -> String {
    let t = secs(s);
    match t.split_once(' ') {
        Some((num, unit)) if num.contains('.') => {
            format!("{} {unit}", num.trim_end_matches('0').trim_end_matches('.'))
        }
        _ => t,
    }
}

/// `pts` log-spaced points from lo to hi.
fn log_space(lo: f64, hi: f64, pts: usize) -> Vec<f64> {
    let (a, b) = (lo.ln(), hi.ln());
    (0..pts).map(|i| (a + (b - a) * i as f64 / (pts - 1) as f64).exp()).collect()
}

pub(super) fn plot(
    model: &CostModel,
    k: &Kernel,
    n: f64,
    unit: &str,
    cross: &[(Residency, Crossover)],
    net: &[(NetworkLink, Crossover)],
    path: &Path,
) -> Result<(), Box<dyn Error>> {
    let p = &model.profile;
    let kp = p.kernel(k.name)?;
    // Widen the x range to take in n and every n*.
    let (mut x0, mut x1) = k.x_range;
    for x in std::iter::once(n).chain(cross.iter().filter_map(|(_, c)| match c {
        Crossover::At { n } => Some(*n),
        _ => None,
    })) {
        x0 = x0.min(x / 4.0).max(1.0);
        x1 = x1.max(x * 4.0);
    }
    let xs = log_space(x0, x1, 240);
    let mut cpu_lines = Vec::new();
    for c in &kp.cpu {
        let ys: Vec<(f64, f64)> = xs
            .iter()
            .map(|&x| Ok((x, model.cpu_time(k.name, x, c.procs)?)))
            .collect::<Result<_, Box<dyn Error>>>()?;
        cpu_lines.push((c.procs, ys));
    }
    // The cache-resident fit at the most Ps, when the profile has one: a dashed line beside the
    // priced ones (the best case the CPU reaches on warm data; the model does not price it).
    let resident: Option<(usize, Vec<(f64, f64)>)> = kp
        .cpu_resident
        .iter()
        .max_by_key(|c| c.procs)
        .map(|c| (c.procs, xs.iter().map(|&x| (x, c.fit.eval(kp.size.work(x)))).collect()));
    let gpu = |r: Residency| -> Result<Vec<(f64, f64)>, Box<dyn Error>> {
        xs.iter().map(|&x| Ok((x, model.predict(k.name, x, r, 0.0)?.gpu_total))).collect()
    };
    let gpu_host = gpu(Residency::Host)?;
    let gpu_dev = gpu(Residency::Device)?;
    // Scattered over 2 ranks, per link: the network's time per batch beside the GPU's.
    let scattered: Vec<(String, Vec<(f64, f64)>)> = match net_basis(model, k) {
        Some((procs, bytes)) => net
            .iter()
            .map(|(link, _)| {
                let pts = xs
                    .iter()
                    .map(|&x| {
                        let s = link.scatter_time(x, 2, bytes, |m| {
                            model.cpu_time(k.name, m, procs).unwrap_or(f64::NAN)
                        })?;
                        Ok((x, s.scattered))
                    })
                    .collect::<Result<Vec<_>, Box<dyn Error>>>()?;
                Ok((link.label.clone(), pts))
            })
            .collect::<Result<_, Box<dyn Error>>>()?,
        None => Vec::new(),
    };
    let all_y = cpu_lines
        .iter()
        .flat_map(|(_, l)| l.iter())
        .chain(resident.iter().flat_map(|(_, l)| l.iter()))
        .chain(&gpu_host)
        .chain(&gpu_dev)
        .chain(scattered.iter().flat_map(|(_, l)| l.iter()))
        .map(|&(_, y)| y);
    let (mut y0, mut y1) = (f64::INFINITY, 0.0f64);
    for y in all_y.filter(|y| *y > 0.0 && y.is_finite()) {
        y0 = y0.min(y);
        y1 = y1.max(y);
    }
    if !(y0.is_finite() && y1 > 0.0) {
        return Err("the model predicts no positive times to plot".into());
    }
    // Room below the lowest line for the n* labels, above the highest for the legend.
    let (y0, y1) = (y0 / 12.0, y1 * 8.0);

    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    // The header: title, the profile's label, then one line per residency (n*, or why never).
    let mut header: Vec<(String, u32, RGBColor)> =
        vec![(format!("{}: time per batch against batch size ({})", k.flag, tag(p)), 24, BLACK)];
    for line in wrap(&format!("profile: {}", p.label()), 130) {
        header.push((line, 15, RGBColor(70, 70, 70)));
    }
    for (r, c) in cross {
        let who = match r {
            Residency::Host => "GPU with transfers (host-resident)",
            Residency::Device => "GPU without transfers (device-resident)",
            Residency::Pageable => "GPU with pageable transfers",
        };
        let text = match c {
            Crossover::At { n } => format!("{who}: wins from n* = {} {unit}", size(*n)),
            Crossover::Always => format!("{who}: wins at every size"),
            Crossover::Never { reason, wins_below: Some(_) } => {
                format!("{who}: loses at large n — {reason}")
            }
            Crossover::Never { reason, .. } => format!("{who}: never wins — {reason}"),
        };
        for line in wrap(&text, 130) {
            header.push((line, 15, BLACK));
        }
    }
    for (link, c) in net {
        let who = format!("scattered to a 2nd rank over {} ({})", link.label, link_tag(link));
        let text = match c {
            Crossover::At { n } => format!("{who}: pays from n* = {} {unit}", size(*n)),
            Crossover::Always => format!("{who}: pays at every size"),
            Crossover::Never { reason, .. } => format!("{who}: never pays — {reason}"),
        };
        for line in wrap(&text, 130) {
            header.push((line, 15, RGBColor(40, 110, 60)));
        }
    }
    let header_h: u32 = header.iter().map(|(_, px, _)| px + 8).sum::<u32>() + 16;
    let root = SVGBackend::new(path, (1100, 680 + header_h)).into_drawing_area();
    root.fill(&WHITE)?;
    let (top, body) = root.split_vertically(header_h);
    let mut y = 10;
    for (line, px, color) in header {
        top.draw(&Text::new(line, (20, y), ("sans-serif", px).into_font().color(&color)))?;
        y += px as i32 + 8;
    }

    let mut chart = ChartBuilder::on(&body)
        .margin_left(16)
        .margin_right(30)
        .margin_bottom(12)
        .x_label_area_size(56)
        .y_label_area_size(90)
        .build_cartesian_2d((x0..x1).log_scale(), (y0..y1).log_scale())?;
    chart
        .configure_mesh()
        .x_desc(format!("batch size n ({unit})"))
        .y_desc("predicted time per batch")
        .x_label_formatter(&|x| if *x >= 1e4 { format!("{:e}", x) } else { size(*x) })
        .y_label_formatter(&|y| tick_secs(*y))
        .label_style(("sans-serif", 15))
        .axis_desc_style(("sans-serif", 17))
        .light_line_style(BLACK.mix(0.04))
        .bold_line_style(BLACK.mix(0.12))
        .draw()?;

    let nc = cpu_lines.len().max(1);
    for (i, (procs, pts)) in cpu_lines.into_iter().enumerate() {
        // Blues, light (1 P) to dark (all Ps).
        let light = 0.70 - 0.45 * i as f64 / (nc.max(2) - 1) as f64;
        let color = HSLColor(0.60, 0.75, light);
        chart
            .draw_series(LineSeries::new(pts, color.stroke_width(2)))?
            .label(format!("CPU, {procs} P"))
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 24, y)], color.stroke_width(3)));
    }
    if let Some((procs, pts)) = resident {
        let color = HSLColor(0.60, 0.75, 0.25);
        chart
            .draw_series(DashedLineSeries::new(pts, 6, 4, color.stroke_width(2)))?
            .label(format!("CPU, {procs} P, cache-resident (best case, not priced)"))
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 24, y)], color.stroke_width(1)));
    }
    let host_color = RGBColor(214, 39, 40);
    let dev_color = RGBColor(255, 127, 14);
    chart
        .draw_series(LineSeries::new(gpu_host, host_color.stroke_width(3)))?
        .label("GPU with transfers (host-resident)")
        .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 24, y)], host_color.stroke_width(3)));
    chart
        .draw_series(LineSeries::new(gpu_dev, dev_color.stroke_width(3)))?
        .label("GPU without transfers (device-resident)")
        .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 24, y)], dev_color.stroke_width(3)));

    // Greens, one per link: dashed, the time per batch scattered over 2 ranks.
    let net_colors = [RGBColor(44, 160, 44), RGBColor(23, 110, 60), RGBColor(120, 190, 60)];
    for (i, (label, pts)) in scattered.into_iter().enumerate() {
        let color = net_colors[i % net_colors.len()];
        chart
            .draw_series(DashedLineSeries::new(pts, 9, 4, color.stroke_width(2)))?
            .label(format!("CPU, scattered to a 2nd rank over {label}"))
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 24, y)], color.stroke_width(2)));
    }

    // n* for each residency, where it exists: a dashed vertical line and its label.
    let stars: Vec<f64> = cross
        .iter()
        .filter_map(|(_, c)| match c {
            Crossover::At { n } => Some(*n),
            _ => None,
        })
        .collect();
    for (i, (r, c)) in cross.iter().enumerate() {
        let Crossover::At { n: star } = c else { continue };
        let (color, who) = match r {
            Residency::Host | Residency::Pageable => (host_color, "with transfers"),
            Residency::Device => (dev_color, "data on device"),
        };
        chart.draw_series(DashedLineSeries::new(
            vec![(*star, y0), (*star, y1)],
            8,
            5,
            color.stroke_width(2),
        ))?;
        // In the empty band at the bottom, staggered so the two never overlap; to the left of
        // the line when it is near the right edge.
        let y_label = y0 * 10f64.powf(0.45 + 0.5 * i as f64);
        // Right of the line, except: left of it for the smaller of two n* (so its label does not
        // cross the other line) when there is room, and left of it near the right edge.
        let frac = (star / x0).ln() / (x1 / x0).ln();
        let smaller = stars.iter().any(|s| s > star);
        let left = frac > 0.75 || (smaller && frac > 0.3);
        let (text, anchor) = if left {
            (format!("n* = {} ({who}) ", size(*star)), HPos::Right)
        } else {
            (format!(" n* = {} ({who})", size(*star)), HPos::Left)
        };
        let style = ("sans-serif", 15).into_font().color(&color).pos(Pos::new(anchor, VPos::Top));
        chart.draw_series(std::iter::once(Text::new(text, (*star, y_label), style)))?;
    }
    // The run's own n, a thin grey line.
    chart.draw_series(DashedLineSeries::new(
        vec![(n, y0), (n, y1)],
        3,
        4,
        BLACK.mix(0.45).stroke_width(1),
    ))?;
    chart.draw_series(std::iter::once(Text::new(
        format!(" n = {}", size(n)),
        (n, y1 / 2.5),
        ("sans-serif", 14).into_font().color(&BLACK.mix(0.7)),
    )))?;

    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .margin(12)
        .label_font(("sans-serif", 15))
        .background_style(WHITE.mix(0.9))
        .border_style(BLACK.mix(0.5))
        .draw()?;
    root.present()?;
    Ok(())
}
