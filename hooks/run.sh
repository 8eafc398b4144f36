#!/bin/sh
# memcli's Claude Code hook launcher: run the hook client of the installed memcli with its own Python.
#
#   sh run.sh <SessionStart|UserPromptSubmit|Stop|SessionEnd>   (JSON payload on stdin)
#
# The Python that has memcli installed is found once and cached in the plugin's data dir:
#   1. $MEMCLI_PYTHON, if set;
#   2. the cached path (re-checked: it must still be executable);
#   3. the interpreter named by the `memcli` (or `mnemo`) script on PATH: its shebang line, or the
#      `exec` line pip writes for long paths; then pipx / uv tool locations.
# If memcli is not installed, this says so once (a systemMessage) and is otherwise silent. Always exits 0.
#
# Fast path: the hook client imports only the standard library, so it runs as a plain script with
# `python -I -S <path>/memcli/hooks/client.py` (no site-packages scan: ~40 ms less per prompt than
# `python -m memcli.hooks`, which is used when the path is unknown or Python is older than 3.11).

event="${1:-}"
# Claude Code signals its async hooks (Stop) when it exits — right after the last turn of `claude -p`, or when
# a session ends: a captured turn must not die with it. (Ignored signals stay ignored in the Python we exec.)
case "$event" in
    Stop|SessionEnd) trap '' TERM HUP INT ;;
esac
data="${CLAUDE_PLUGIN_DATA:-${XDG_CACHE_HOME:-$HOME/.cache}/memcli-plugin}"
cache="$data/python"
notice="$data/not-installed-notified"

usable() {
    [ -n "$1" ] && [ -x "$1" ]
}

from_script() {
    # The interpreter a console script runs with.
    [ -r "$1" ] || return 1
    first=$(head -n 1 "$1" 2>/dev/null)
    case "$first" in
        "#!/bin/sh"*|"#!/usr/bin/env sh"*)
            # pip's long-path form:  '''exec' "/path/to/python" "$0" "$@"
            line=$(sed -n "2p" "$1" 2>/dev/null)
            py=$(printf '%s\n' "$line" | sed -n "s/^'''exec' \"\{0,1\}\([^\" ]*\)\"\{0,1\} .*/\1/p")
            ;;
        "#!/usr/bin/env "*)
            name=${first#"#!/usr/bin/env "}
            name=${name%% *}
            py=$(command -v "$name" 2>/dev/null)
            ;;
        "#!"*)
            py=${first#"#!"}
            py=${py%% *}
            ;;
        *) return 1 ;;
    esac
    usable "$py" && printf '%s\n' "$py"
}

find_python() {
    if usable "${MEMCLI_PYTHON:-}"; then
        printf '%s\n' "$MEMCLI_PYTHON"
        return 0
    fi
    for name in memcli mnemo; do
        script=$(command -v "$name" 2>/dev/null) || continue
        py=$(from_script "$script") && { printf '%s\n' "$py"; return 0; }
    done
    for py in "$HOME/.local/pipx/venvs/memcli/bin/python" "$HOME/.local/share/pipx/venvs/memcli/bin/python" \
              "$HOME/.local/share/uv/tools/memcli/bin/python"; do
        usable "$py" && { printf '%s\n' "$py"; return 0; }
    done
    return 1
}

py=""
client=""
if [ -r "$cache" ]; then
    { IFS= read -r py; IFS= read -r client; } < "$cache" || true
    usable "$py" || { py=""; client=""; }
fi
if usable "${MEMCLI_PYTHON:-}" && [ "$py" != "$MEMCLI_PYTHON" ]; then
    py=""
    client=""
fi

if [ -z "$py" ]; then
    py=$(find_python) || py=""
    if [ -n "$py" ]; then
        client=$("$py" -c "import sys, memcli.hooks.client as c; print(c.__file__ if sys.version_info >= (3, 11) else '')" 2>/dev/null) || py=""
    fi
    if [ -n "$py" ]; then
        mkdir -p "$data" 2>/dev/null && printf '%s\n%s\n' "$py" "$client" > "$cache" 2>/dev/null
        rm -f "$notice" 2>/dev/null
    fi
fi

if [ -z "$py" ]; then
    cat > /dev/null  # drain stdin
    case "$event" in
        SessionStart|UserPromptSubmit)
            if [ ! -e "$notice" ]; then
                mkdir -p "$data" 2>/dev/null && : > "$notice" 2>/dev/null
                printf '%s\n' '{"systemMessage": "memcli plugin: the memcli command is not installed, so memories are not recalled or captured. Install it with: pipx install memcli  (or: pip install memcli), then start a new session. Set MEMCLI_PYTHON to use a specific Python."}'
            fi
            ;;
    esac
    exit 0
fi

if [ -n "$client" ] && [ -r "$client" ]; then
    "$py" -I -S "$client" "$event" 2>/dev/null
else
    "$py" -m memcli.hooks "$event" 2>/dev/null
fi
status=$?
if [ "$status" -ne 0 ]; then
    # memcli vanished from that Python (uninstalled, upgraded elsewhere): look again next time.
    rm -f "$cache" 2>/dev/null
fi
exit 0
