#!/bin/sh
# meson install script: the host config (argument 1) into $DESTDIR + directory (argument 2), unless
# a config is already there: an edited /etc/gpuslice/config.toml survives every reinstall. What it
# installs (and the directories it makes) is added to meson-logs/install-config.log for `make
# uninstall`, which removes the file only while it is unedited.
set -eu
src=$1
dir=${DESTDIR:-}$2
log=${MESON_BUILD_ROOT:-.}/meson-logs/install-config.log
if [ -e "$dir/config.toml" ] || [ -L "$dir/config.toml" ]; then
        echo "Keeping $dir/config.toml (an existing host config is never replaced; defaults: $src)"
        if cmp -s "$src" "$dir/config.toml"; then echo "file $dir/config.toml" >>"$log"; fi
        exit 0
fi
# The directories this makes, outermost first (uninstall removes them innermost first, if empty).
missing=""
d=$dir
while [ ! -d "$d" ]; do
        missing="$d
$missing"
        d=$(dirname "$d")
done
install -d -m 0755 "$dir"
printf '%s' "$missing" | while IFS= read -r m; do [ -n "$m" ] && echo "dir $m" >>"$log"; done
install -m 0644 "$src" "$dir/config.toml"
echo "file $dir/config.toml" >>"$log"
echo "Installing $src to $dir/config.toml"
