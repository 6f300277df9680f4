/* sfu -- the special function unit's approximate instructions as an H100 computes them:
 * ex2.approx.ftz.f32, rcp.approx.ftz.f32 and lg2.approx.ftz.f32 bit for bit on every binary32 input
 * (tests/data/sfu/README.md says how they were measured and recovered: split models around
 * table-plus-quadratic cores whose integers scripts/dev/sfu_fit.c finds; lg2 with 9 measured inputs) */
#include "num/sfu/sfu.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

/* The probe (scripts/device/sfu_probe4.cu) compiles this file as CUDA device code to check the model
 * on the GPU: it defines SFU_FN and SFU_TAB; plain C leaves them empty. */
#ifndef SFU_FN
#define SFU_FN
#define SFU_TAB
#endif

/* The cores' datapath constants: the rounding added before the final shift. */
#define SFU_EX2_K 0x77e2
#define SFU_RCP_K 0x47e7
#define SFU_LG2_K 0x3345

/* The datapath's tables, recovered from the measured cores by scripts/dev/sfu_fit.c: per segment
 * of the fraction (64 for ex2, 128 for rcp), c0, c1, c2 of (c0 2^13 + c1 x + c2 sq(x) + K) >> 15;
 * for lg2 (64 segments), of (c0 2^12 + c1 x + c2 sq(x) + K) >> 2. */
SFU_TAB static const int32_t SFU_EX2_TAB[64][3] = {
    {33554432, 22713, 494},
    {33919815, 22960, 501},
    {34289179, 23210, 506},
    {34662562, 23463, 511},
    {35040015, 23718, 518},
    {35421574, 23977, 521},
    {35807289, 24238, 527},
    {36197206, 24502, 532},
    {36591369, 24768, 541},
    {36989822, 25038, 546},
    {37392613, 25311, 551},
    {37799794, 25586, 559},
    {38211406, 25865, 564},
    {38627501, 26147, 568},
    {39048128, 26431, 577},
    {39473334, 26719, 583},
    {39903170, 27010, 589},
    {40337687, 27304, 596},
    {40776934, 27602, 600},
    {41220967, 27902, 609},
    {41669833, 28206, 615},
    {42123589, 28513, 622},
    {42582283, 28824, 627},
    {43045974, 29138, 633},
    {43514714, 29455, 641},
    {43988558, 29776, 647},
    {44467562, 30100, 655},
    {44951783, 30428, 661},
    {45441275, 30759, 670},
    {45936098, 31094, 677},
    {46436311, 31432, 686},
    {46941968, 31775, 691},
    {47453132, 32121, 699},
    {47969864, 32471, 705},
    {48492222, 32824, 715},
    {49020266, 33182, 721},
    {49554062, 33543, 730},
    {50093671, 33908, 739},
    {50639156, 34277, 748},
    {51190579, 34651, 753},
    {51748008, 35028, 763},
    {52311507, 35409, 773},
    {52881143, 35795, 779},
    {53456980, 36185, 787},
    {54039088, 36579, 796},
    {54627535, 36977, 806},
    {55222390, 37380, 813},
    {55823722, 37787, 822},
    {56431604, 38198, 833},
    {57046103, 38614, 842},
    {57667294, 39035, 849},
    {58295251, 39460, 858},
    {58930045, 39889, 870},
    {59571751, 40324, 877},
    {60220444, 40763, 887},
    {60876202, 41207, 896},
    {61539101, 41655, 909},
    {62209217, 42109, 917},
    {62886631, 42568, 925},
    {63571421, 43031, 938},
    {64263669, 43500, 946},
    {64963455, 43973, 959},
    {65670860, 44452, 969},
    {66385969, 44936, 980},
};
SFU_TAB static const int32_t SFU_RCP_TAB[128][3] = {
    {67108862, -65534, 1013},
    {66588640, -64522, 989},
    {66076420, -63533, 966},
    {65572019, -62567, 945},
    {65075260, -61622, 923},
    {64585974, -60699, 902},
    {64103990, -59797, 883},
    {63629144, -58914, 863},
    {63161282, -58051, 845},
    {62700252, -57207, 827},
    {62245903, -56381, 809},
    {61798089, -55572, 791},
    {61356675, -54781, 774},
    {60921522, -54007, 758},
    {60492497, -53249, 742},
    {60069472, -52507, 727},
    {59652323, -51780, 711},
    {59240928, -51068, 696},
    {58835168, -50371, 682},
    {58434928, -49688, 669},
    {58040097, -49019, 656},
    {57650567, -48363, 642},
    {57266229, -47721, 631},
    {56886984, -47091, 618},
    {56512727, -46473, 605},
    {56143364, -45868, 594},
    {55778796, -45274, 582},
    {55418932, -44692, 572},
    {55063684, -44121, 561},
    {54712959, -43560, 549},
    {54366675, -43011, 540},
    {54024745, -42471, 529},
    {53687091, -41942, 519},
    {53353631, -41423, 510},
    {53024286, -40913, 501},
    {52698985, -40412, 490},
    {52377649, -39921, 482},
    {52060210, -39439, 474},
    {51746594, -38965, 465},
    {51436735, -38500, 457},
    {51130563, -38043, 449},
    {50828015, -37594, 441},
    {50529027, -37153, 433},
    {50233536, -36720, 426},
    {49941480, -36294, 418},
    {49652801, -35876, 412},
    {49367440, -35464, 403},
    {49085340, -35060, 397},
    {48806447, -34663, 390},
    {48530703, -34272, 383},
    {48258058, -33888, 377},
    {47988462, -33511, 371},
    {47721859, -33140, 366},
    {47458202, -32774, 358},
    {47197442, -32415, 353},
    {46939532, -32062, 348},
    {46684427, -31714, 341},
    {46432080, -31373, 337},
    {46182444, -31036, 331},
    {45935478, -30705, 326},
    {45691141, -30379, 320},
    {45449390, -30059, 316},
    {45210183, -29743, 310},
    {44973479, -29432, 305},
    {44739242, -29127, 302},
    {44507434, -28826, 297},
    {44278014, -28529, 291},
    {44050946, -28237, 287},
    {43826197, -27950, 283},
    {43603728, -27667, 279},
    {43383508, -27388, 274},
    {43165501, -27114, 271},
    {42949673, -26843, 266},
    {42735993, -26577, 263},
    {42524428, -26314, 258},
    {42314948, -26056, 256},
    {42107523, -25801, 251},
    {41902120, -25550, 248},
    {41698712, -25302, 243},
    {41497268, -25058, 240},
    {41297762, -24818, 237},
    {41100166, -24581, 233},
    {40904451, -24348, 231},
    {40710591, -24117, 226},
    {40518559, -23890, 223},
    {40328331, -23667, 222},
    {40139881, -23446, 218},
    {39953184, -23228, 214},
    {39768216, -23014, 212},
    {39584953, -22802, 208},
    {39403369, -22593, 205},
    {39223446, -22388, 204},
    {39045157, -22184, 199},
    {38868482, -21984, 197},
    {38693399, -21787, 196},
    {38519886, -21592, 193},
    {38347922, -21399, 189},
    {38177487, -21209, 186},
    {38008561, -21022, 184},
    {37841121, -20837, 182},
    {37675152, -20655, 180},
    {37510631, -20475, 178},
    {37347541, -20297, 175},
    {37185864, -20122, 173},
    {37025580, -19949, 171},
    {36866671, -19778, 169},
    {36709122, -19609, 166},
    {36552913, -19443, 165},
    {36398028, -19278, 161},
    {36244450, -19116, 160},
    {36092162, -18956, 159},
    {35941149, -18797, 155},
    {35791394, -18641, 154},
    {35642882, -18487, 153},
    {35495597, -18334, 150},
    {35349526, -18184, 149},
    {35204650, -18035, 147},
    {35060957, -17888, 145},
    {34918434, -17743, 143},
    {34777062, -17600, 143},
    {34636833, -17458, 140},
    {34497730, -17318, 138},
    {34359739, -17180, 137},
    {34222847, -17043, 135},
    {34087042, -16908, 133},
    {33952311, -16775, 132},
    {33818639, -16643, 131},
    {33686017, -16513, 130},
};

SFU_TAB static const int32_t SFU_LG2_TAB[64][3] = {
    {4, 47272, -1454},
    {1501079, 46545, -1410},
    {2979245, 45840, -1370},
    {4435175, 45156, -1330},
    {5869538, 44492, -1292},
    {7282959, 43847, -1254},
    {8676041, 43221, -1220},
    {10049360, 42612, -1184},
    {11403480, 42020, -1152},
    {12738914, 41444, -1118},
    {14056181, 40884, -1088},
    {15355766, 40339, -1060},
    {16638137, 39809, -1036},
    {17903740, 39292, -1008},
    {19153020, 38788, -982},
    {20386385, 38297, -958},
    {21604230, 37818, -932},
    {22806952, 37351, -910},
    {23994914, 36896, -890},
    {25168473, 36451, -866},
    {26327980, 36018, -850},
    {27473760, 35594, -828},
    {28606142, 35180, -808},
    {29725435, 34776, -792},
    {30831935, 34380, -770},
    {31925930, 33994, -754},
    {33007703, 33616, -736},
    {34077522, 33247, -722},
    {35135647, 32886, -708},
    {36182338, 32532, -692},
    {37217831, 32186, -678},
    {38242363, 31847, -662},
    {39256170, 31516, -652},
    {40259469, 31191, -638},
    {41252482, 30872, -622},
    {42235412, 30561, -614},
    {43208461, 30255, -600},
    {44171827, 29955, -586},
    {45125706, 29662, -578},
    {46070272, 29374, -566},
    {47005713, 29091, -552},
    {47932206, 28814, -542},
    {48849917, 28542, -532},
    {49759005, 28276, -524},
    {50659642, 28014, -514},
    {51551982, 27757, -506},
    {52436166, 27505, -498},
    {53312349, 27257, -488},
    {54180673, 27013, -476},
    {55041280, 26774, -468},
    {55894305, 26540, -464},
    {56739875, 26309, -454},
    {57578131, 26082, -446},
    {58409188, 25859, -438},
    {59233176, 25640, -432},
    {60050206, 25424, -422},
    {60860396, 25213, -418},
    {61663866, 25004, -408},
    {62460727, 24799, -402},
    {63251077, 24598, -398},
    {64035034, 24399, -390},
    {64812688, 24204, -384},
    {65584146, 24012, -378},
    {66349505, 23823, -372},
};

/* The square the datapath forms of a 17-bit x: a partial product x >> (18 - i) for each set
 * bit i, summed and halved (about x^2 2^-19, truncated at every partial product). */
SFU_FN static int64_t sfu_sq(uint32_t x)
{
    int64_t r = 0;
    for (int i = 0; i < 17; i++) /* without a branch: the bits are data, and mispredicted half the time */
        r += (int64_t)((x >> i & 1) * (x >> (18 - i)));
    return r >> 1;
}

/* One segment's quadratic: the result's significand with 23 fraction bits, in [2^23, 2^24]. */
SFU_FN static int64_t sfu_core(const int32_t tab[][3], uint32_t f, int xb, int sh, int64_t k)
{
    uint32_t seg = f >> xb, x = f & ((1u << xb) - 1);
    int64_t s = ((int64_t)tab[seg][0] << 13) + (int64_t)tab[seg][1] * x + (int64_t)tab[seg][2] * sfu_sq(x << sh) + k;
    return s >> 15;
}

SFU_FN float sfu_ftz(float y)
{
    uint32_t b;
    memcpy(&b, &y, 4);
    if ((b & 0x7f800000u) == 0)
        b &= 0x80000000u;
    memcpy(&y, &b, 4);
    return y;
}

/* v 2^e rounded once to binary32 (RNE, subnormals kept: ldexpf's result) for an integer v below
 * 2^53 and v 2^e within binary64's normal range: the binary64 product is exact, its conversion
 * the one rounding. Without libm's scaling calls. */
SFU_FN static float sfu_scale(int64_t v, int e)
{
    uint64_t u = (uint64_t)(1023 + e) << 52;
    double p;
    memcpy(&p, &u, sizeof p);
    return (float)((double)v * p);
}

#ifndef __CUDACC__
const int32_t (*sfu_ex2_table(void))[3]
{
    return SFU_EX2_TAB;
}
#endif

SFU_FN float sfu_ex2(float x)
{
    if (x != x)
        return x;
    if (!(fabsf(x) < 128.0f))
        return x > 0 ? INFINITY : 0.0f;
    /* |x| truncated to 23 fraction bits (exact in binary64), I.F */
    uint64_t mag = (uint64_t)(fabs((double)x) * 0x1p23);
    int i = (int)(mag >> 23);
    uint32_t f = (uint32_t)(mag & 0x7fffff);
    if (x < 0 && f == 0)
        return sfu_ftz(sfu_scale(1, -i));
    if (x < 0) /* 2^-(I + F) = 2^(-I-1) 2^(1 - F): the core at the one's complement of F */
        return sfu_ftz(sfu_scale(sfu_core(SFU_EX2_TAB, ~f & 0x7fffff, 17, 0, SFU_EX2_K), -23 - i - 1));
    /* the core is below 2^24: (float)ldexp(core, -23) was exact, so one rounding as before */
    return sfu_ftz(sfu_scale(sfu_core(SFU_EX2_TAB, f, 17, 0, SFU_EX2_K), i - 23));
}

SFU_FN float sfu_rcp(float x)
{
    uint32_t b;
    memcpy(&b, &x, 4);
    uint32_t sign = b & 0x80000000u, e = b >> 23 & 0xff;
    if (x != x)
        return x;
    if (e == 0) { /* zero, or a subnormal flushed to zero */
        b = sign | 0x7f800000u;
        memcpy(&x, &b, 4);
        return x;
    }
    if (e == 0xff)
        return sign ? -0.0f : 0.0f;
    /* 1/(m 2^(e-127)) = (2/m) 2^(126-e), 2/m from the core on m's fraction */
    double r = ldexp((double)sfu_core(SFU_RCP_TAB, b & 0x7fffff, 16, 1, SFU_RCP_K), -23);
    float y = ldexpf((float)r, 126 - (int)e);
    return sfu_ftz(sign ? -y : y);
}

/* Leading bit of v > 0. */
SFU_FN static int sfu_msb(int64_t v)
{
    int p = 0;
    while (v >> (p + 1))
        p++;
    return p;
}

/* lg2's nine inputs (all in [1, 2)) where the model's normalizer test holds but the H100 keeps the
 * fraction unshifted, measured over every binary32 input (tests/data/sfu/probe4.txt); the test the
 * hardware makes is not recovered, the list makes the model equal it on all 2^32 inputs */
SFU_TAB static const uint32_t SFU_LG2_UNSHIFTED[9] = {0x3f800001, 0x3f800005, 0x3f80002c, 0x3f8000b1, 0x3f801630,
                                                      0x3f802c64, 0x3f8058d8, 0x3f85aac3, 0x3f9837f0};

SFU_FN float sfu_lg2(float x)
{
    uint32_t b;
    memcpy(&b, &x, 4);
    uint32_t e = b >> 23 & 0xff, f = b & 0x7fffff;
    if (x != x)
        return x;
    if (e == 0) /* zero and subnormals (flushed) */
        return -INFINITY;
    if (b >> 31)
        return NAN;
    if (e == 0xff)
        return INFINITY;
    if (f == 0 && e == 127)
        return 0.0f;
    /* the core: log2 of the significand with 36 fraction bits (res has 38: the quadratic plus K) */
    uint32_t seg = f >> 17, xl = f & 0x1ffff;
    int64_t s0 = ((int64_t)SFU_LG2_TAB[seg][0] << 12) + (int64_t)SFU_LG2_TAB[seg][1] * xl +
                 (int64_t)SFU_LG2_TAB[seg][2] * sfu_sq(xl);
    int64_t ie = (int64_t)e - 127;
    /* the exponent joins as the integer part; a negative sum is negated by one's complement */
    int64_t v = ((s0 + SFU_LG2_K) >> 2) + ie * ((int64_t)1 << 36);
    int64_t vl = (s0 >> 2) + ie * ((int64_t)1 << 36); /* the normalizer's shift comes from the sum before K */
    int neg = v < 0;
    if (neg) {
        v = ~v;
        vl = ~vl;
    }
    if (v == 0)
        return neg ? -0.0f : 0.0f;
    /* 24 leading bits, truncated; where the shift was found one bit lower (the sum before K is
     * below the power of two that v reaches), the fraction field comes out shifted by one */
    int p = sfu_msb(v), pl = vl > 0 ? sfu_msb(vl) : p;
    int64_t t = p > 23 ? v >> (p - 23) : v << (23 - p); /* significand, 24 bits */
    int64_t frac = t & 0x7fffff;
    int keep = 0;
    for (int i = 0; i < 9; i++)
        keep |= b == SFU_LG2_UNSHIFTED[i];
    if (pl < p && !keep)
        frac = (frac << 1) & 0x7fffff;
    float y = ldexpf((float)(0x800000 | frac), p - 36 - 23);
    return sfu_ftz(neg ? -y : y);
}
