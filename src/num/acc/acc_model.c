/* acc_model -- the accumulation models' table and the SIMD switch (num/acc_model.h) */
#include "num/acc/acc_model.h"

#include <string.h>

const acc_info_t acc_table[ACC_COUNT] = {
    {"fp64", "binary64 sequential fma in k order (stand-in for exact at an --exact site)"},
    {"fp32-fma", "binary32 sequential fused multiply-add in k order: acc = fmaf(a, b, acc)"},
    {"fp32-mul-add", "binary32 in k order, product rounded then sum rounded"},
    {"fp16-acc", "binary16 accumulator (Volta m8n8k4): per 4 products, exact sum plus C rounded to fp16"},
    {"tc-volta", "V100 tensor core: blocks of 4 products + C, aligned, truncated to 23 fraction bits, RZ to fp32"},
    {"tc-ampere", "A100/Ada tensor core (fp16/bf16): blocks of 8, 24 fraction bits, RZ to fp32"},
    {"tc-hopper", "H100/H200 tensor core (fp16/bf16): blocks of 16, 25 fraction bits, RZ to fp32"},
    {"tc-hopper-k8", "H100/H200 mma.sync m16n8k8 (fp16/bf16): blocks of 8 (one instruction), 25 fraction bits, RZ to fp32"},
    {"tc-hopper-fp8", "Hopper FP8: blocks of 32, 13 fraction bits, promoted to an FP32 accumulator every 128"},
    {"tc-hopper-fp8-fast", "Hopper FP8 with fast accumulation: blocks of 32, 13 fraction bits, no promotion"},
};

int acc_from_name(const char *name)
{
    for (int i = 0; i < ACC_COUNT; i++)
        if (strcmp(name, acc_table[i].name) == 0)
            return i;
    return -1;
}

int acc_simd = 2;
