#include "loadtest/svg_plot.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>

namespace herald::loadtest {

namespace {

constexpr double width = 900, height = 520;
constexpr double left = 80, right = 30, top = 50, bottom = 60;
constexpr const char* colors[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd",
                                  "#8c564b", "#e377c2", "#17becf", "#7f7f7f", "#bcbd22"};

std::string escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
    case '<':
      out += "&lt;";
      break;
    case '>':
      out += "&gt;";
      break;
    case '&':
      out += "&amp;";
      break;
    case '"':
      out += "&quot;";
      break;
    default:
      out += c;
    }
  }
  return out;
}

// "Nice" upper bound of an axis: 1, 2 or 5 times a power of ten.
double nice_ceiling(double v) {
  if (v <= 0)
    return 1;
  double p = std::pow(10.0, std::floor(std::log10(v)));
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (m * p >= v)
      return m * p;
  return 10 * p;
}

// The opening of a chart: the <svg> element, a white background, the title.
void open_svg(std::ostringstream& o, const std::string& title) {
  o << R"(<svg xmlns="http://www.w3.org/2000/svg" width=")" << width << R"(" height=")" << height
    << R"(" font-family="sans-serif" font-size="12">)"
    << "\n";
  o << R"(<rect width="100%" height="100%" fill="white"/>)"
    << "\n";
  o << R"(<text x=")" << width / 2 << R"(" y="24" text-anchor="middle" font-size="15">)"
    << escape(title) << "</text>\n";
}

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  return buf;
}

std::string tick_label(double ms) {
  char buf[32];
  if (ms >= 100 || ms == std::floor(ms))
    std::snprintf(buf, sizeof buf, "%.0f", ms);
  else if (ms >= 1)
    std::snprintf(buf, sizeof buf, "%.1f", ms);
  else
    std::snprintf(buf, sizeof buf, "%.2f", ms);
  return buf;
}

} // namespace

std::string render_percentile_svg(const std::string& title,
                                  const std::vector<plot_series>& series) {
  // x = log10(1 / (1 - p)), capped where the data ends.
  double max_x = 2, max_ms = 0;
  for (const auto& [label, h] : series) {
    if (!h || h->count() == 0)
      continue;
    double last_p = 1.0 - 1.0 / static_cast<double>(h->count());
    max_x = std::max(max_x, std::ceil(std::log10(1.0 / std::max(1e-7, 1.0 - last_p))));
    max_ms = std::max(max_ms, static_cast<double>(h->max()) / 1e6);
  }
  max_x = std::min(max_x, 6.0);
  double y_top = nice_ceiling(max_ms * 1.05);
  double pw = width - left - right, ph = height - top - bottom;
  auto px = [&](double x) { return left + pw * std::min(x, max_x) / max_x; };
  auto py = [&](double ms) { return top + ph * (1.0 - std::min(ms, y_top) / y_top); };

  std::ostringstream o;
  open_svg(o, title);
  // Grid and axes.
  for (int i = 0; i <= 5; ++i) {
    double ms = y_top * i / 5;
    o << R"(<line x1=")" << left << R"(" x2=")" << left + pw << R"(" y1=")" << num(py(ms))
      << R"(" y2=")" << num(py(ms)) << R"(" stroke="#ddd"/>)"
      << R"(<text x=")" << left - 8 << R"(" y=")" << num(py(ms) + 4) << R"(" text-anchor="end">)"
      << tick_label(ms) << "</text>\n";
  }
  for (int k = 0; k <= static_cast<int>(max_x); ++k) {
    double pct = 100.0 * (1.0 - std::pow(10.0, -k));
    std::string label = k == 0   ? "0%"
                        : k == 1 ? "90%"
                        : k == 2 ? "99%"
                                 : [&] {
                                     char buf[32];
                                     std::snprintf(buf, sizeof buf, "%.*f%%", k - 2, pct);
                                     return std::string{buf};
                                   }();
    o << R"(<line x1=")" << num(px(k)) << R"(" x2=")" << num(px(k)) << R"(" y1=")" << top
      << R"(" y2=")" << top + ph << R"(" stroke="#ddd"/>)"
      << R"(<text x=")" << num(px(k)) << R"(" y=")" << top + ph + 18 << R"(" text-anchor="middle">)"
      << label << "</text>\n";
  }
  o << R"(<rect x=")" << left << R"(" y=")" << top << R"(" width=")" << pw << R"(" height=")" << ph
    << R"(" fill="none" stroke="#444"/>)"
    << "\n";
  o << R"(<text x=")" << left + pw / 2 << R"(" y=")" << height - 18
    << R"(" text-anchor="middle">percentile</text>)"
    << "\n";
  o << R"(<text transform="translate(20 )" << top + ph / 2
    << R"svg() rotate(-90)" text-anchor="middle">publish-to-receive latency (ms)</text>)svg"
    << "\n";
  // Curves.
  std::size_t ci = 0;
  double legend_y = top + 16;
  for (const auto& [label, h] : series) {
    if (!h || h->count() == 0)
      continue;
    const char* color = colors[ci++ % (sizeof colors / sizeof *colors)];
    o << R"(<polyline fill="none" stroke-width="2" stroke=")" << color << R"(" points=")";
    double prev_x = 0;
    for (const auto& [value, frac] : h->cdf()) {
      double ms = static_cast<double>(value) / 1e6;
      double x = frac >= 1.0 ? max_x : std::log10(1.0 / (1.0 - frac));
      o << num(px(prev_x)) << ',' << num(py(ms)) << ' ' << num(px(x)) << ',' << num(py(ms)) << ' ';
      prev_x = x;
    }
    o << "\"/>\n";
    o << R"(<rect x=")" << left + 12 << R"(" y=")" << legend_y - 9
      << R"(" width="14" height="3" fill=")" << color << R"("/>)"
      << R"(<text x=")" << left + 32 << R"(" y=")" << legend_y - 4 << "\">" << escape(label)
      << "</text>\n";
    legend_y += 16;
  }
  o << "</svg>\n";
  return o.str();
}

bool write_percentile_svg(const std::string& path, const std::string& title,
                          const std::vector<plot_series>& series) {
  std::ofstream f(path);
  if (!f)
    return false;
  f << render_percentile_svg(title, series);
  return static_cast<bool>(f);
}

namespace {

std::string count_label(double v) {
  char buf[32];
  if (v >= 1e6)
    std::snprintf(buf, sizeof buf, "%gM", v / 1e6);
  else if (v >= 1e3)
    std::snprintf(buf, sizeof buf, "%gk", v / 1e3);
  else
    std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

} // namespace

std::string render_timeline_svg(const std::string& title,
                                const std::vector<timeline_sample>& samples,
                                const std::vector<timeline_marker>& markers) {
  // Rates between consecutive samples, placed at the later sample's time.
  struct point {
    double t, deliveries, publications, open; // per second; connections
  };
  std::vector<point> pts;
  for (std::size_t i = 1; i < samples.size(); ++i) {
    double dt = samples[i].t_s - samples[i - 1].t_s;
    if (dt <= 0)
      continue;
    auto rate = [&](std::uint64_t a, std::uint64_t b) {
      return b >= a ? static_cast<double>(b - a) / dt : 0.0;
    };
    pts.push_back({samples[i].t_s, rate(samples[i - 1].received, samples[i].received),
                   rate(samples[i - 1].published, samples[i].published),
                   static_cast<double>(samples[i].open)});
  }
  double t0 = samples.empty() ? 0 : samples.front().t_s;
  double t1 = samples.empty() ? 1 : std::max(samples.back().t_s, t0 + 1);
  double max_deliveries = 0, max_publications = 0, max_open = 0;
  for (const auto& p : pts) {
    max_deliveries = std::max(max_deliveries, p.deliveries);
    max_publications = std::max(max_publications, p.publications);
    max_open = std::max(max_open, p.open);
  }
  // Publications/s is deliveries/s over the subscribers per publication:
  // drawn times a power of ten so both curves use the height of the plot.
  double pub_scale = 1;
  if (max_publications > 0 && max_deliveries / max_publications >= 10)
    pub_scale = std::pow(10.0, std::floor(std::log10(max_deliveries / max_publications)));
  for (auto& p : pts)
    p.publications *= pub_scale;
  double max_rate = std::max(max_deliveries, max_publications * pub_scale);
  double y_top = nice_ceiling(max_rate * 1.05), open_top = nice_ceiling(max_open * 1.05);
  constexpr double right_axis = 70;
  double pw = width - left - right - right_axis, ph = height - top - bottom;
  auto px = [&](double t) { return left + pw * (std::clamp(t, t0, t1) - t0) / (t1 - t0); };
  auto py = [&](double v, double topv) { return top + ph * (1.0 - std::min(v, topv) / topv); };

  std::ostringstream o;
  open_svg(o, title);
  for (int i = 0; i <= 5; ++i) {
    double v = y_top * i / 5, y = py(v, y_top);
    o << R"(<line x1=")" << left << R"(" x2=")" << left + pw << R"(" y1=")" << num(y) << R"(" y2=")"
      << num(y) << R"(" stroke="#ddd"/>)"
      << R"(<text x=")" << left - 8 << R"(" y=")" << num(y + 4) << R"(" text-anchor="end">)"
      << count_label(v) << "</text>"
      << R"(<text x=")" << left + pw + 8 << R"(" y=")" << num(y + 4) << R"(" fill="#2ca02c">)"
      << count_label(open_top * i / 5) << "</text>\n";
  }
  double span = t1 - t0;
  double step = nice_ceiling(span / 10);
  for (double t = std::ceil(t0 / step) * step; t <= t1 + 1e-9; t += step)
    o << R"(<line x1=")" << num(px(t)) << R"(" x2=")" << num(px(t)) << R"(" y1=")" << top
      << R"(" y2=")" << top + ph << R"(" stroke="#eee"/>)"
      << R"(<text x=")" << num(px(t)) << R"(" y=")" << top + ph + 18 << R"(" text-anchor="middle">)"
      << tick_label(t) << "</text>\n";
  o << R"(<rect x=")" << left << R"(" y=")" << top << R"(" width=")" << pw << R"(" height=")" << ph
    << R"(" fill="none" stroke="#444"/>)"
    << "\n";
  o << R"(<text x=")" << left + pw / 2 << R"(" y=")" << height - 18
    << R"(" text-anchor="middle">seconds since the run started</text>)"
    << "\n";
  o << R"(<text transform="translate(20 )" << top + ph / 2
    << R"svg() rotate(-90)" text-anchor="middle">per second</text>)svg"
    << "\n";
  o << R"(<text transform="translate()" << width - 12 << ' ' << top + ph / 2
    << R"svg() rotate(90)" text-anchor="middle" fill="#2ca02c">open connections</text>)svg"
    << "\n";
  double marker_y = top + 12;
  for (const auto& [label, t] : markers) {
    o << R"(<line x1=")" << num(px(t)) << R"(" x2=")" << num(px(t)) << R"(" y1=")" << top
      << R"(" y2=")" << top + ph << R"(" stroke="#888" stroke-dasharray="4 3"/>)"
      << R"(<text x=")" << num(px(t) + 4) << R"(" y=")" << num(marker_y) << R"(" fill="#555">)"
      << escape(label) << "</text>\n";
    marker_y += 14; // close markers must not print over each other
  }
  std::string pub_label = "publications/s";
  if (pub_scale > 1)
    pub_label += " (x" + count_label(pub_scale) + ")";
  struct line {
    const char* label;
    const char* color;
    double point::*field;
    double top;
  };
  const line lines[] = {{"deliveries/s", colors[0], &point::deliveries, y_top},
                        {pub_label.c_str(), colors[1], &point::publications, y_top},
                        {"open connections (right axis)", colors[2], &point::open, open_top}};
  double legend_y = top + 16;
  for (const auto& l : lines) {
    if (pts.empty())
      break;
    o << R"(<polyline fill="none" stroke-width="2" stroke=")" << l.color << R"(" points=")";
    for (const auto& p : pts)
      o << num(px(p.t)) << ',' << num(py(p.*l.field, l.top)) << ' ';
    o << "\"/>\n";
    o << R"(<rect x=")" << left + 12 << R"(" y=")" << legend_y - 9
      << R"(" width="14" height="3" fill=")" << l.color << R"("/>)"
      << R"(<text x=")" << left + 32 << R"(" y=")" << legend_y - 4 << "\">" << escape(l.label)
      << "</text>\n";
    legend_y += 16;
  }
  o << "</svg>\n";
  return o.str();
}

bool write_timeline_svg(const std::string& path, const std::string& title,
                        const std::vector<timeline_sample>& samples,
                        const std::vector<timeline_marker>& markers) {
  std::ofstream f(path);
  if (!f)
    return false;
  f << render_timeline_svg(title, samples, markers);
  return static_cast<bool>(f);
}

} // namespace herald::loadtest
