#!/bin/sh
# inputs.sh -- the committed captures' input arrays that their seeds draw again (rebuild_inputs.py, with a Python
# that has numpy: Debian's python3-numpy); run before anything reads tests/data.
for py in /usr/bin/python3 python3; do
    if "$py" -c 'import numpy' >/dev/null 2>&1; then
        exec "$py" "$(dirname "$0")/rebuild_inputs.py"
    fi
done
echo "inputs.sh: no Python with numpy (Debian's python3-numpy) to draw the captures' inputs again" >&2
exit 1
