/* dd_exp_vec -- dd.c's exp of a shifted, scaled double-double on DDV_W lanes at once: the scalar
 * dd_exp's operations lane for lane, so every lane equals dd_exp_shifted bit for bit. Included
 * by dd.c once per vector width, after it defines (V: DDV_W binary64 lanes; I: DDV_W int32):
 *   DDV(name)          the width's name for a function
 *   DDV_TGT            the target attribute
 *   VD, VI             the vector types
 *   V_SET1 V_ADD V_SUB V_MUL V_FMSUB V_XOR V_LOAD V_STORE   binary64 lane operations
 *   V_CVT_I(v)         binary64 lanes (integers) to int32 lanes
 *   I_SET1 I_AND I_SUB I_SRAI I_SLLI I_STORE               int32 lane operations
 *   V_GATHER(base, i)  base[i] per lane (scale 8)
 *   V_POW2(i)          2^i per lane (i a binary64 exponent)
 *   V_REDO(x, i)       bit l set where lane l is outside the common range: x < -745.2 or NaN,
 *                      x > 709.7, or i < -1022 */

typedef struct {
    VD hi, lo;
} DDV(dd_t);

DDV_TGT static inline __attribute__((always_inline)) DDV(dd_t) DDV(two_sum)(VD a, VD b)
{
    VD s = V_ADD(a, b), bb = V_SUB(s, a);
    return (DDV(dd_t)){s, V_ADD(V_SUB(a, V_SUB(s, bb)), V_SUB(b, bb))};
}

DDV_TGT static inline __attribute__((always_inline)) DDV(dd_t) DDV(fast_two_sum)(VD a, VD b)
{
    VD s = V_ADD(a, b);
    return (DDV(dd_t)){s, V_SUB(b, V_SUB(s, a))};
}

DDV_TGT static inline __attribute__((always_inline)) DDV(dd_t) DDV(add)(DDV(dd_t) x, DDV(dd_t) y)
{
    DDV(dd_t) s = DDV(two_sum)(x.hi, y.hi), t = DDV(two_sum)(x.lo, y.lo);
    s.lo = V_ADD(s.lo, t.hi);
    s = DDV(fast_two_sum)(s.hi, s.lo);
    s.lo = V_ADD(s.lo, t.lo);
    return DDV(fast_two_sum)(s.hi, s.lo);
}

DDV_TGT static inline __attribute__((always_inline)) DDV(dd_t) DDV(mul)(DDV(dd_t) x, DDV(dd_t) y)
{
    VD p = V_MUL(x.hi, y.hi);
    VD e = V_FMSUB(x.hi, y.hi, p);
    e = V_ADD(e, V_ADD(V_MUL(x.hi, y.lo), V_MUL(x.lo, y.hi)));
    return DDV(fast_two_sum)(p, e);
}

DDV_TGT static inline __attribute__((always_inline)) DDV(dd_t) DDV(set)(dd_t a)
{
    return (DDV(dd_t)){V_SET1(a.hi), V_SET1(a.lo)};
}

/* dd_exp_shifted on DDV_W lanes; lanes outside the common range (result 0, inf, subnormal
 * scale) are redone by the scalar code. */
DDV_TGT static void DDV(exp)(double *hi, double *lo, double m, dd_t scale)
{
    const VD C = V_SET1(0x1.8p52), zero = V_SET1(0.0), nz = V_SET1(-0.0);
    const DDV(dd_t) in = {V_LOAD(hi), V_LOAD(lo)};
    DDV(dd_t) x = DDV(mul)(DDV(add)(in, (DDV(dd_t)){V_SET1(-m), zero}), DDV(set)(scale));
    VD k = V_SUB(V_ADD(V_MUL(x.hi, V_SET1(DD_EXP_TSIZE / LN2_HI)), C), C);
    VD p1 = V_MUL(k, V_SET1(LN2K_HI)), p2 = V_MUL(k, V_SET1(LN2K_MID));
    DDV(dd_t) r = DDV(add)(x, (DDV(dd_t)){V_XOR(p1, nz), V_XOR(V_FMSUB(k, V_SET1(LN2K_HI), p1), nz)});
    r = DDV(add)(r, (DDV(dd_t)){V_XOR(p2, nz), V_XOR(V_FMSUB(k, V_SET1(LN2K_MID), p2), nz)});
    r = DDV(add)(r, (DDV(dd_t)){V_XOR(V_MUL(k, V_SET1(LN2K_LO)), nz), zero});
    VD h = r.hi, q = V_SET1(DD_INV_FACT[9].hi);
    for (int n = 8; n >= 5; n--) /* as dd_exp: q = 1/5! + h (1/6! + h (... + h 1/9!)) */
        q = V_ADD(V_SET1(DD_INV_FACT[n].hi), V_MUL(h, q));
    DDV(dd_t) e = DDV(add)(DDV(set)(DD_INV_FACT[4]), DDV(mul)(r, (DDV(dd_t)){q, zero}));
    for (int n = 3; n >= 1; n--)
        e = DDV(add)(DDV(set)(DD_INV_FACT[n]), DDV(mul)(r, e));
    e = DDV(mul)(r, e);
    VI ki = V_CVT_I(k);
    VI j = I_AND(ki, I_SET1(DD_EXP_TSIZE - 1));
    VI mm = I_SRAI(I_SUB(ki, j), DD_EXP_TBITS);
    VI j2 = I_SLLI(j, 1);
    DDV(dd_t) t = {V_GATHER(&dd_exp_table[0].hi, j2), V_GATHER(&dd_exp_table[0].lo, j2)};
    DDV(dd_t) y = DDV(add)(t, DDV(mul)(t, e));
    VD p = V_POW2(mm);
    if (!V_REDO(x.hi, mm)) {
        V_STORE(hi, V_MUL(y.hi, p));
        V_STORE(lo, V_MUL(y.lo, p));
        return;
    }
    double xh[DDV_W], ih[DDV_W], il[DDV_W];
    int mi[DDV_W];
    V_STORE(xh, x.hi);
    V_STORE(ih, in.hi);
    V_STORE(il, in.lo);
    I_STORE(mi, mm);
    V_STORE(hi, V_MUL(y.hi, p));
    V_STORE(lo, V_MUL(y.lo, p));
    for (int l = 0; l < DDV_W; l++)
        if (xh[l] < -745.2 || xh[l] > 709.7 || mi[l] < -1022 || xh[l] != xh[l]) {
            dd_t s = dd_exp_shifted((dd_t){ih[l], il[l]}, m, scale);
            hi[l] = s.hi;
            lo[l] = s.lo;
        }
}
