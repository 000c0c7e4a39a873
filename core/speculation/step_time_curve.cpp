#include "core/speculation/step_time_curve.h"

#include <algorithm>
#include <bit>

namespace drift::speculation {

int StepTimeCurve::bucket_of(int64_t rows) {
  const int b = static_cast<int>(std::bit_width(static_cast<uint64_t>(std::max<int64_t>(rows, 1)))) - 1;
  return std::min(b, kBuckets - 1);
}

void StepTimeCurve::observe(int64_t rows, double seconds) {
  if (rows < 1 || !(seconds >= 0.0)) return;  // also drops NaN
  Bucket& b = buckets_[bucket_of(rows)];
  b.weight = b.weight * decay_ + 1.0;
  b.rows = b.rows * decay_ + static_cast<double>(rows);
  b.seconds = b.seconds * decay_ + seconds;
}

std::optional<double> StepTimeCurve::predict(int64_t rows) const {
  const double r = static_cast<double>(std::max<int64_t>(rows, 1));
  const Bucket* below = nullptr;  // the nearest observed bucket at or below r's mean
  const Bucket* above = nullptr;
  for (const Bucket& b : buckets_) {
    if (b.weight <= 0.0) continue;
    if (b.mean_rows() <= r)
      below = &b;
    else if (!above)
      above = &b;
  }
  if (!below && !above) return std::nullopt;
  // Below every observation: no cheaper than the smallest forward seen.
  if (!below) return above->mean_seconds();
  // Past every observation: in proportion to the rows (never optimistic about an unseen size).
  if (!above) return below->mean_seconds() * r / below->mean_rows();
  const double span = above->mean_rows() - below->mean_rows();
  const double t = span > 0.0 ? (r - below->mean_rows()) / span : 0.0;
  // Time never falls with more rows, even where noise says so.
  const double upper = std::max(above->mean_seconds(), below->mean_seconds());
  return below->mean_seconds() + t * (upper - below->mean_seconds());
}

}  // namespace drift::speculation
