/*
 * axis.c -- axis ticks ("nice" 1-2-5 steps, logarithmic powers) and the
 * formatting of their labels for numbers, durations, bytes and percents.
 * Pure functions.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "nsl/render.h"

/* A unit a value is written in: divide by scale, append suffix. */
typedef struct scaled_unit {
  double scale;
  const char *suffix;
} scaled_unit;

static const scaled_unit ns_units[] = {
    {1, " ns"}, {1e3, " \xc2\xb5s"}, {1e6, " ms"}, {1e9, " s"},
};
static const scaled_unit byte_units[] = {
    {1, " B"},
    {1024.0, " KiB"},
    {1048576.0, " MiB"},
    {1073741824.0, " GiB"},
    {1099511627776.0, " TiB"},
    {1125899906842624.0, " PiB"},
    {1152921504606846976.0, " EiB"},
};
static const scaled_unit number_units[] = {
    {1, ""}, {1e3, "k"}, {1e6, "M"}, {1e9, "G"}, {1e12, "T"},
};

/* The largest unit of the table not above magnitude m (number_units: "k"
 * only from 10^4 on, so 1500 stays 1500). */
static scaled_unit pick_unit(nsl_axis_unit unit, double m) {
  const scaled_unit *t;
  int n;
  switch (unit) {
  case NSL_UNIT_NS: t = ns_units, n = 4; break;
  case NSL_UNIT_BYTES: t = byte_units, n = 7; break;
  case NSL_UNIT_PERCENT: return (scaled_unit){0.01, "%"};
  default: t = number_units, n = 5; break;
  }
  int k = 0;
  for (int i = 1; i < n; i++) {
    double threshold = (unit == NSL_UNIT_NUMBER && i == 1) ? 1e4 : t[i].scale;
    if (m >= threshold) k = i;
  }
  return t[k];
}

/* x (already scaled) with `decimals` decimals and suffix; "0" for zero
 * ("0%" for percents), never "-0". */
static void put_fixed(char *buf, size_t n, double x, int decimals, const char *suffix, nsl_axis_unit unit) {
  if (decimals < 0) decimals = 0;
  if (decimals > 17) decimals = 17;
  if (fabs(x) < 0.5 * pow(10, -decimals)) {
    snprintf(buf, n, "0%s", unit == NSL_UNIT_PERCENT ? "%" : "");
    return;
  }
  if (fabs(x) >= 1e15) {   /* beyond the largest unit: exponent form */
    snprintf(buf, n, "%.3g%s", x, suffix);
    return;
  }
  snprintf(buf, n, "%.*f%s", decimals, x, suffix);
}

/* Drops trailing zeros of the decimals in buf: 1.50 ms -> 1.5 ms, 2.0 -> 2. */
static void trim_zeros(char *buf) {
  char *dot = strchr(buf, '.');
  if (dot == NULL) return;
  char *e = dot + 1;
  while (*e >= '0' && *e <= '9') e++;
  char *z = e;
  while (z > dot + 1 && z[-1] == '0') z--;
  if (z == dot + 1) z = dot;
  memmove(z, e, strlen(e) + 1);
}

/* 1, 2 or 5 times a power of ten, near raw (> 0). */
static double nice_step(double raw) {
  double e = floor(log10(raw));
  double p = pow(10, e);
  double f = raw / p;
  double m = f < 1.5 ? 1 : f < 3 ? 2 : f < 7 ? 5 : 10;
  return m * p;
}

/* The next larger nice step after step. */
static double next_step(double step) {
  double e = floor(log10(step) + 1e-9);
  double p = pow(10, e);
  double f = step / p;
  return (f < 1.5 ? 2 : f < 3 ? 5 : 10) * p;
}

nsl_status nsl_ticks_linear(double lo, double hi, int target, nsl_axis_unit unit, nsl_ticks *out,
                            nsl_error *err) {
  memset(out, 0, sizeof *out);
  if (!isfinite(lo) || !isfinite(hi))
    return nsl_error_set(err, NSL_ERR_ARG, "cannot place axis ticks on the range [%g, %g]: bounds must be finite",
                         lo, hi);
  if (lo > hi) {
    double t = lo;
    lo = hi, hi = t;
  }
  if (target < 2) target = 2;
  if (target > 20) target = 20;

  /* Work in the unit where 1-2-5 steps are "nice": percent points, bytes
   * in the binary unit of the span (which then labels every tick too),
   * everything else as is. */
  double m = fmax(fabs(lo), fabs(hi));
  double work = 1;   /* data value = working value * work */
  double min_step = 0;
  scaled_unit byte_unit = {1, " B"};
  if (unit == NSL_UNIT_PERCENT) work = 0.01;
  if (unit == NSL_UNIT_BYTES) {
    byte_unit = pick_unit(unit, hi - lo > 0 ? hi - lo : m);
    work = byte_unit.scale;
    min_step = 1 / work;   /* one byte */
  }
  if (unit == NSL_UNIT_NS) min_step = 1;   /* one nanosecond */
  double a = lo / work, b = hi / work;
  if (b - a <= fabs(a) * 1e-12) {   /* no span to speak of: widen around the value */
    double d = a == 0 ? 1 : fabs(a) * 0.1;
    if (d < min_step) d = min_step;
    a -= d, b += d;
  }
  double step = nice_step(b / target - a / target);   /* no overflow near DBL_MAX */
  while (step < min_step) step = next_step(step);
  double k0, k1;
  for (;;) {
    k0 = ceil(a / step - 1e-9), k1 = floor(b / step + 1e-9);
    if (k1 - k0 + 1 <= NSL_TICKS_MAX) break;
    step = next_step(step);
  }
  for (double k = k0; k <= k1 && out->n < NSL_TICKS_MAX; k++) {
    double v = k * step * work;
    if (out->n > 0 && v <= out->value[out->n - 1]) continue;   /* beyond double precision */
    out->value[out->n++] = v;
  }
  out->step = step * work;
  out->lo = floor(a / step + 1e-9) * step * work;
  out->hi = ceil(b / step - 1e-9) * step * work;

  /* One unit and one number of decimals for every label. */
  double mt = 0;
  for (int i = 0; i < out->n; i++) mt = fmax(mt, fabs(out->value[i]));
  scaled_unit su = unit == NSL_UNIT_BYTES ? byte_unit : pick_unit(unit, mt);
  double sstep = out->step / su.scale;
  int decimals = (int)-floor(log10(sstep) + 1e-9);
  for (int i = 0; i < out->n; i++) {
    put_fixed(out->label[i], NSL_TICK_LABEL_MAX, out->value[i] / su.scale, decimals, su.suffix, unit);
    trim_zeros(out->label[i]);
  }
  return NSL_OK;
}

char *nsl_format_value(double v, nsl_axis_unit unit, int digits, char *buf, size_t n) {
  if (n == 0) return buf;
  if (digits < 1) digits = 1;
  if (digits > 17) digits = 17;
  if (isnan(v)) {
    snprintf(buf, n, "nan");
    return buf;
  }
  if (isinf(v)) {
    snprintf(buf, n, "%sinf", v < 0 ? "-" : "");
    return buf;
  }
  double m = fabs(v);
  scaled_unit su = pick_unit(unit, m);
  if (unit == NSL_UNIT_NUMBER && m >= 1e15) su = number_units[0];   /* plain exponent form */
  double x = v / su.scale;
  if (x == 0) {
    put_fixed(buf, n, 0, 0, "", unit);
    return buf;
  }
  if (fabs(x) < 1e-4 || fabs(x) >= 1e15) {
    snprintf(buf, n, "%.*g%s", digits, x, su.suffix);
    return buf;
  }
  int decimals = digits - 1 - (int)floor(log10(fabs(x)));
  if (decimals < 0) decimals = 0;
  /* rounding may carry into the next unit: 999.96 ns is 1 µs */
  double r = round(fabs(x) * pow(10, decimals)) / pow(10, decimals);
  scaled_unit up = pick_unit(unit, r * su.scale);
  if (up.scale > su.scale) {
    x = copysign(r * su.scale / up.scale, v);
    su = up;
    decimals = digits - 1 - (int)floor(log10(fabs(x)));
    if (decimals < 0) decimals = 0;
  }
  put_fixed(buf, n, x, decimals, su.suffix, unit);
  trim_zeros(buf);
  return buf;
}

/* Adds value v (with its own label) to out unless full. */
static void add_tick(nsl_ticks *out, double v, nsl_axis_unit unit) {
  if (out->n >= NSL_TICKS_MAX) return;
  out->value[out->n] = v;
  nsl_format_value(v, unit, 3, out->label[out->n], NSL_TICK_LABEL_MAX);
  out->n++;
}

/* Ticks at base^(k * stride) for exponents k*stride within [e0, e1]. */
static int power_ticks(double base, int e0, int e1, int stride, nsl_axis_unit unit, nsl_ticks *out) {
  int first = (int)ceil((double)e0 / stride) * stride;
  out->n = 0;
  for (int e = first; e <= e1; e += stride) add_tick(out, pow(base, e), unit);
  return out->n;
}

static int count_multiples(int e0, int e1, int stride) {
  int first = (int)ceil((double)e0 / stride) * stride;
  return first > e1 ? 0 : (e1 - first) / stride + 1;
}

nsl_status nsl_ticks_log(double lo, double hi, int target, nsl_axis_unit unit, nsl_ticks *out,
                         nsl_error *err) {
  memset(out, 0, sizeof *out);
  if (!isfinite(lo) || !isfinite(hi) || !(lo > 0) || !(hi > 0))
    return nsl_error_set(err, NSL_ERR_ARG,
                         "cannot place logarithmic ticks on the range [%g, %g]: bounds must be positive and finite",
                         lo, hi);
  if (lo > hi) {
    double t = lo;
    lo = hi, hi = t;
  }
  if (target < 2) target = 2;
  if (target > 20) target = 20;
  const double eps = 1e-9;

  if (unit == NSL_UNIT_BYTES) {
    /* powers of two, every tenth (1 KiB, 1 MiB, ...) when that is enough */
    int e0 = (int)ceil(log2(lo) - eps), e1 = (int)floor(log2(hi) + eps);
    out->lo = pow(2, floor(log2(lo) + eps));
    out->hi = pow(2, ceil(log2(hi) - eps));
    if (e1 - e0 >= 1) {
      int stride = 10;
      if (count_multiples(e0, e1, 10) > target) {
        while (count_multiples(e0, e1, stride) > target) stride += 10;
      } else if (count_multiples(e0, e1, 10) < 3) {
        static const int finer[] = {1, 2, 5};
        stride = 10;
        for (int k = 0; k < 3; k++)
          if (count_multiples(e0, e1, finer[k]) <= target) {
            stride = finer[k];
            break;
          }
      }
      power_ticks(2, e0, e1, stride, unit, out);
      out->step = pow(2, stride);
      return NSL_OK;
    }
  } else {
    int e0 = (int)ceil(log10(lo) - eps), e1 = (int)floor(log10(hi) + eps);
    out->lo = pow(10, floor(log10(lo) + eps));
    out->hi = pow(10, ceil(log10(hi) - eps));
    double decades = log10(hi) - log10(lo);
    if (decades >= 2 && e1 > e0) {
      /* every power, or every 2nd, 3rd (SI prefixes), 5th, 10th, 20th, ... */
      int stride = 1;
      while (count_multiples(e0, e1, stride) > target)
        stride = stride == 1 ? 2 : stride == 2 ? 3 : stride == 3 ? 5 : (int)next_step(stride);
      power_ticks(10, e0, e1, stride, unit, out);
      out->step = pow(10, stride);
      return NSL_OK;
    }
    /* less than two decades: 1, 2 and 5 times the powers of ten */
    static const double mult[] = {1, 2, 5};
    int d0 = (int)floor(log10(lo) + eps), d1 = (int)ceil(log10(hi) - eps);
    for (int d = d0; d <= d1; d++)
      for (int k = 0; k < 3; k++) {
        double v = mult[k] * pow(10, d);
        if (v >= lo * (1 - eps) && v <= hi * (1 + eps)) add_tick(out, v, unit);
      }
    if (out->n >= 2) {
      out->step = 0;   /* not a constant factor */
      return NSL_OK;
    }
  }
  /* within one octave / one 1-2-5 step: plain linear ticks */
  double nlo = out->lo, nhi = out->hi;
  nsl_status st = nsl_ticks_linear(lo, hi, target, unit, out, err);
  if (st == NSL_OK) out->lo = nlo, out->hi = nhi;
  return st;
}
