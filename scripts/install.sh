#!/bin/sh
# Installs questions from a release archive, as its own user (no root): checks the
# archive's SHA-256 sum against the .sha256 file beside it, unpacks the binary into
# ~/.local/bin (or $QUESTIONS_INSTALL_DIR), and says how to put that folder on PATH when
# it is not.
#
#   sh install.sh [ARCHIVE]    default: the questions-*-<this machine>-*.tar.gz beside this
#                              script or in the current folder
#
# An archive whose sum does not match, or that has no .sha256 beside it, is refused and
# nothing is installed.
set -eu

say() { printf 'install.sh: %s\n' "$*" >&2; }
die() { say "$*"; exit 1; }

archive=${1:-}
if [ -z "$archive" ]; then
  here=$(dirname "$0")
  arch=$(uname -m)
  for dir in "$here" .; do
    for candidate in "$dir"/questions-*-"$arch"-*.tar.gz; do
      [ -f "$candidate" ] && archive=$candidate && break 2
    done
  done
  [ -n "$archive" ] || die "no questions-*-$arch-*.tar.gz here: download the archive and its .sha256 for this machine, or name the archive: sh install.sh ARCHIVE"
fi
[ -f "$archive" ] || die "$archive: no such file"
[ -f "$archive.sha256" ] || die "$archive.sha256 is missing: download the sum beside the archive; nothing was installed"

dir=$(cd "$(dirname "$archive")" && pwd)
name=$(basename "$archive")
if command -v sha256sum >/dev/null 2>&1; then
  (cd "$dir" && sha256sum -c --quiet "$name.sha256") >/dev/null 2>&1 \
    || die "$name does not match $name.sha256: download both again; nothing was installed"
elif command -v shasum >/dev/null 2>&1; then
  (cd "$dir" && shasum -a 256 -c --quiet "$name.sha256") >/dev/null 2>&1 \
    || die "$name does not match $name.sha256: download both again; nothing was installed"
else
  die "neither sha256sum nor shasum is installed, so the archive's sum cannot be checked; nothing was installed"
fi

target=${QUESTIONS_INSTALL_DIR:-${HOME:?HOME is not set: set QUESTIONS_INSTALL_DIR to the folder to install into}/.local/bin}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
tar -xzf "$archive" -C "$work"
bin=$(find "$work" -type f -name questions | head -n 1)
[ -n "$bin" ] || die "$name holds no questions binary"
mkdir -p "$target"
# Beside the old one, then renamed over it: a running questions keeps its file.
cp "$bin" "$target/.questions.new"
chmod 755 "$target/.questions.new"
mv -f "$target/.questions.new" "$target/questions"
say "installed $("$target/questions" --version) as $target/questions"

case ":$PATH:" in
  *":$target:"*) ;;
  *)
    say "$target is not on PATH: add it for this shell and the next ones:"
    say "  export PATH=\"$target:\$PATH\""
    say "  echo 'export PATH=\"$target:\$PATH\"' >> ~/.profile"
    ;;
esac
