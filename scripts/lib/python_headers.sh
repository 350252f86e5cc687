# Make sure the C headers of a Python interpreter are installed (sourced, not run; needs lib/apt.sh).
#
#   ensure_python_headers /path/to/venv/bin/python
#
# Packages built from source (rpy2 for the R bridge) include Python.h from the directory that the
# interpreter's sysconfig names. Debian's own python3.X ships it in the separate package
# python3.X-dev, which a bare machine lacks; that one is installed with the shared apt logic. Any
# other interpreter (pyenv, conda, a hand-built Python) brings its headers itself or not at all:
# then this stops and says what is missing and how to get it.
ensure_python_headers() {
  local python="$1" info include base_exe version
  info="$("$python" -c 'import os, sys, sysconfig
print(sysconfig.get_paths()["include"])
print(os.path.realpath(getattr(sys, "_base_executable", sys.executable)))
print("%d.%d" % sys.version_info[:2])')" || { apt_err "cannot run $python"; return 1; }
  include="$(sed -n 1p <<<"$info")"
  base_exe="$(sed -n 2p <<<"$info")"
  version="$(sed -n 3p <<<"$info")"
  [ -f "$include/Python.h" ] && return 0
  case "$base_exe" in
    /usr/bin/python3*)
      apt_say "Python.h is missing for Debian's $base_exe; installing python${version}-dev"
      apt_ensure "python${version}-dev" || return 1
      [ -f "$include/Python.h" ] ||
        { apt_err "python${version}-dev is installed but $include/Python.h is still missing"; return 1; }
      ;;
    *)
      apt_err "the C headers of $base_exe (Python $version) are missing: no $include/Python.h." \
        "This interpreter is not Debian's, so its headers cannot come from apt: reinstall it with its" \
        "headers (pyenv and conda include them; a system Python needs its -dev package), or point" \
        "PYTHON= at Debian's /usr/bin/python3 and delete .venv"
      return 1
      ;;
  esac
}
