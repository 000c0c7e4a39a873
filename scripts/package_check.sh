#!/usr/bin/env bash
# The install as a new user gets it (CI runs this after scripts/test.sh, reusing ./build):
#   1. `cmake --install build` into a temporary prefix, then the prefix is moved elsewhere;
#   2. the moved binary runs `generate` with every shipped config -- each names its plugin
#      (ngram, eagle3, suffix_cache, prefix_cache, specpv) without a path -- and must load it
#      from inside the moved prefix, DRIFT_PLUGIN_PATH unset;
#   3. `plugins list` there shows every shipped plugin found in the moved install tree;
#   4. the out-of-tree SDK example (tests/abi/sdk) builds against the moved prefix with
#      find_package(drift) and runs in that engine, found on DRIFT_PLUGIN_PATH;
#   5. `cpack -G DEB` makes the Debian package: its --info and --contents are printed, its
#      Depends checked, and its unpacked tree runs `plugins list` the same way.
# Exit status 1 on the first failed check. BUILD_DIR overrides ./build.
set -euo pipefail
cd "$(dirname "$0")/.."
build=$(realpath "${BUILD_DIR:-build}")
[ -x "$build/apps/drift" ] || { echo "package_check: no $build/apps/drift; run scripts/build.sh first" >&2; exit 1; }
plugins=(eagle3 ngram prefix_cache specpv suffix_cache)
configs=(ngram eagle3 suffix prefix-cache specpv)
work=$(mktemp -d /tmp/drift-package-check.XXXXXX)
trap 'rm -rf "$work"' EXIT
unset DRIFT_PLUGIN_PATH
fail() { echo "package_check: FAILED: $*" >&2; exit 1; }

echo "== install, then move the prefix"
cmake --install "$build" --prefix "$work/prefix" > "$work/install.log"
mv "$work/prefix" "$work/moved"
prefix=$work/moved
drift=$prefix/bin/drift
runpath=$(readelf -d "$drift" | sed -n 's/.*(RUNPATH).*\[\(.*\)\]/\1/p')
echo "RUNPATH: $runpath"
[[ "$runpath" == '$ORIGIN/'* ]] || fail "bin/drift's RUNPATH is not relative to the executable"
! grep -qF "$build" "$drift" || fail "bin/drift names the build folder $build"
"$drift" --version

echo "== generate with each shipped plugin named in its config"
for c in "${configs[@]}"; do
  config=configs/stories260k-$c.toml
  "$drift" generate --config "$config" --prompt "Once upon a time" --max-new-tokens 16 --json \
    > "$work/$c.out" 2> "$work/$c.err" || { cat "$work/$c.err" >&2; fail "generate --config $config"; }
  loaded=$(grep -o "loaded from /[^ ]*" "$work/$c.err" | sed 's/loaded from //')
  [ -n "$loaded" ] || fail "$config: no plugin loaded"
  for lib in $loaded; do [[ "$lib" == "$prefix/"* ]] || fail "$config: plugin loaded from $lib, outside $prefix"; done
  grep -q '"finish_reason":"length"' "$work/$c.out" || fail "$config: no complete output"
  echo "$config: $(echo $loaded | tr '\n' ' ')"
done

echo "== plugins list (moved install)"
"$drift" plugins list | tee "$work/list.txt"
for p in "${plugins[@]}"; do
  grep -Eq "^$p +[0-9.]+ +[0-9.]+ +[a-z_,]+ +install tree +$prefix/lib/drift/plugins/libdrift_$p\.so$" "$work/list.txt" ||
    fail "plugins list: $p not found in $prefix/lib/drift/plugins"
done

echo "== the out-of-tree SDK example against the moved prefix"
cmake -S tests/abi/sdk -B "$work/sdk" -DCMAKE_PREFIX_PATH="$prefix" > "$work/sdk.log" 2>&1 &&
  cmake --build "$work/sdk" >> "$work/sdk.log" 2>&1 || { cat "$work/sdk.log" >&2; fail "SDK example build"; }
printf 'schema_version = 1\n[model]\npath = "%s/models/stories260K"\n[speculative]\nenabled = true\ndraft_provider = "sdk_example"\nmax_draft_tokens = 2\n[[plugins]]\nname = "sdk_example"\n' \
  "$PWD" > "$work/sdk.toml"
DRIFT_PLUGIN_PATH=$work/sdk "$drift" generate --config "$work/sdk.toml" --prompt-ids 1,403 --max-new-tokens 4 --json \
  > "$work/sdk.out" 2> "$work/sdk.err" || { cat "$work/sdk.err" >&2; fail "the SDK example in the engine"; }
grep -q "loaded from $work/sdk/libsdk_example.so" "$work/sdk.err" || fail "sdk_example not found on DRIFT_PLUGIN_PATH"
DRIFT_PLUGIN_PATH=$work/sdk "$drift" plugins list | grep -E "^sdk_example "

echo "== the Debian package"
(cd "$build" && cpack -G DEB > "$work/cpack.log" 2>&1) || { cat "$work/cpack.log" >&2; fail "cpack -G DEB"; }
deb=$(ls -t "$build"/package/driftengine_*.deb | head -1)
echo "$deb ($(du -h "$deb" | cut -f1))"
dpkg-deb --info "$deb"
dpkg-deb --contents "$deb" | tee "$work/contents.txt"
depends=$(dpkg-deb --field "$deb" Depends)
for lib in libboost-program-options libspdlog libfmt libtomlplusplus libsentencepiece libstdc++6 libc6; do
  [[ "$depends" == *"$lib"* ]] || fail "Depends lacks $lib: $depends"
done
for p in "${plugins[@]}"; do
  grep -q "\./usr/lib/drift/plugins/libdrift_$p\.so$" "$work/contents.txt" || fail "the package lacks $p"
done
dpkg-deb -x "$deb" "$work/deb"
"$work/deb/usr/bin/drift" plugins list > "$work/deb-list.txt"
grep -E "^(NAME|ngram) " "$work/deb-list.txt"
grep -q "install tree  $work/deb/usr/lib/drift/plugins/libdrift_ngram.so" "$work/deb-list.txt" ||
  fail "the unpacked package's drift does not find its plugins"
echo "package_check: OK"
