#pragma once
// StepTimeCurve: how long a forward of R rows takes, learned from the forwards the engine runs
// (decode steps, verify steps with their draft rows, prefill chunks). Adaptive speculation asks it
// what a step would cost with more draft rows: on a GPU a verify forward of 6 rows costs about
// what a decode of 1 does, on the CPU nearly six times as much, and the curve is what tells the
// two apart at the batch actually running.
//
// Rows are grouped in power-of-two buckets (1, 2-3, 4-7, ...); each keeps decayed means of its
// forwards' rows and seconds, so the curve follows a changing load. Between buckets it is
// piecewise linear; past the largest bucket seen it grows in proportion to the rows (the
// pessimistic guess: it never makes an unmeasured size look free).
#include <array>
#include <cstdint>
#include <optional>

namespace drift::speculation {

class StepTimeCurve {
 public:
  static constexpr int kBuckets = 20;  // up to 2^19 rows a forward

  // decay: weight of the past in each bucket's means per new observation (0.9: about the last
  // ten forwards of that size).
  explicit StepTimeCurve(double decay = 0.9) : decay_(decay) {}

  void observe(int64_t rows, double seconds);
  // The predicted seconds of a forward of `rows` rows (>= 1); nullopt until anything was seen.
  std::optional<double> predict(int64_t rows) const;

 private:
  struct Bucket {
    double weight = 0.0;  // decayed count of forwards
    double rows = 0.0;    // decayed sums
    double seconds = 0.0;
    double mean_rows() const { return rows / weight; }
    double mean_seconds() const { return seconds / weight; }
  };
  static int bucket_of(int64_t rows);

  double decay_;
  std::array<Bucket, kBuckets> buckets_{};
};

}  // namespace drift::speculation
