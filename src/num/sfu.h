/* sfu -- the special function unit's approximate instructions (H100, fast-math code) */
#ifndef AMLA_SFU_H
#define AMLA_SFU_H

/* ex2.approx.ftz.f32: 2^x as the SFU computes it (subnormal inputs and results flushed). */
float sfu_ex2(float x);

/* rcp.approx.ftz.f32: 1/x as the SFU computes it (subnormal inputs and results flushed). */
float sfu_rcp(float x);

/* lg2.approx.ftz.f32: log2(x) as the SFU computes it (subnormal inputs flushed: -inf); equal to
 * the H100's on every binary32 input but 9 near 1 (tests/data/sfu/probe4.txt), where its
 * normalizer's shift is off by one in a way the model does not capture. */
float sfu_lg2(float x);

/* A binary32 result with flush-to-zero: subnormal -> zero of the same sign (every FP32
 * instruction of a --use_fast_math kernel does this). */
float sfu_ftz(float y);

#endif
