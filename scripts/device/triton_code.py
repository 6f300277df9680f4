"""triton_code.py -- what the Triton capture scripts (capture_triton_mla.py, capture_sglang_decode.py) share on the
device machine: save_code(kernels, out, dtype, info) writes each stage's PTX as OUT/ptx-DTYPE-STAGE.ptx and its SASS
(cuobjdump of the cubin) as OUT/sass-DTYPE-STAGE.sass, and records the kernels' names, warps and stages in
info["compiled"] (errors in info["code_errors"]); run_cases runs the cases and writes OUT/meta.json."""
import json
import os
import subprocess
import tempfile


def save_code(kernels, out, dtype, info):
    for stage, ck in zip(("stage1", "stage2"), kernels):
        try:
            tag = f"{dtype}-{stage}"
            with open(os.path.join(out, f"ptx-{tag}.ptx"), "w") as f:
                f.write(ck.asm["ptx"])
            with tempfile.NamedTemporaryFile(suffix=".cubin") as cub:
                cub.write(ck.asm["cubin"])
                cub.flush()
                sass = subprocess.run(["cuobjdump", "-sass", cub.name], capture_output=True, text=True).stdout
            with open(os.path.join(out, f"sass-{tag}.sass"), "w") as f:
                f.write(sass)
            info.setdefault("compiled", {})[stage] = {"name": ck.name, "num_warps": ck.metadata.num_warps,
                                                      "num_stages": ck.metadata.num_stages}
        except Exception as e:
            info.setdefault("code_errors", []).append(str(e)[:200])


def run_cases(out, meta, cases, run_case):
    """Each case of cases (name: (dtype, ...)) by run_case(name, case, keep_code), keep_code true for the first case of
    its dtype, into meta["cases"] (its info, or its error), printed as it ends; then meta as OUT/meta.json. The
    environment's CAPTURE_CASES, a comma-separated list, picks the cases to run (default all)."""
    only = os.environ.get("CAPTURE_CASES")
    seen = set()
    for name, case in cases.items():
        if only and name not in only.split(","):
            continue
        try:
            meta["cases"][name] = run_case(name, case, case[0] not in seen)
            seen.add(case[0])
        except Exception as e:
            meta["cases"][name] = {"error": str(e).splitlines()[0][:300]}
        print(name, json.dumps(meta["cases"][name]), flush=True)
    with open(os.path.join(out, "meta.json"), "w") as f:
        json.dump(meta, f, indent=1)
