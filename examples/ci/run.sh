#!/usr/bin/env bash
# The CI recipe of docs/ci.md, run locally end to end: a copy of examples/lab in a temporary
# Git repository with two commits — `main`, built once so the state has production's records,
# and a branch `change` that edits three models (a new column, a data change, a comment) —
# then what a pull request's pipeline runs:
#
#   check → plan against main's state → run on a CI environment (--ref ci-<pr>) → test →
#   diff → review
#
# The review (Markdown, what CI posts on the pull request) is printed and written to
# review.md beside the repository, whose path is printed last. Nothing outside the temporary
# directory is written.
#
#   examples/ci/run.sh                       # builds the binary with cargo first
#   PHLO_TRANSFORM=path/to/phlo-transform examples/ci/run.sh
#   KEEP=1 examples/ci/run.sh                # keep the temporary repository
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
checkout=$(cd "$here/../.." && pwd)
if [[ -z "${PHLO_TRANSFORM:-}" ]]; then
    cargo build --quiet --manifest-path "$checkout/Cargo.toml"
    target=${CARGO_TARGET_DIR:-$checkout/target}
    PHLO_TRANSFORM="$target/debug/phlo-transform"
fi
pr=${PR:-1}

work=$(mktemp -d)
if [[ -z "${KEEP:-}" ]]; then
    trap 'rm -rf "$work"' EXIT
fi
repo="$work/repo"
mkdir -p "$repo"
# The workspace without its build output.
tar -C "$checkout/examples/lab" --exclude=./.phlo -cf - . | tar -C "$repo" -xf -
cd "$repo"
phlo() {
    echo "+ phlo-transform $*" >&2
    "$PHLO_TRANSFORM" "$@"
}
git_() { git -c user.email=ci@example.com -c user.name=ci "$@"; }

printf '.phlo/\n' > .gitignore
git_ init -q -b main
git_ add -A
git_ commit -q -m "lab workspace"

# Production: main built once, so plan, diff and review have main's records and test results.
phlo run > /dev/null

# The pull request's branch: a new column (SAFE), a data change, a comment only.
git_ checkout -q -b change
sed -i 's/^    s.active$/    s.active,\n    upper(s.country) as country_code/' transforms/shared/sites.sql
sed -i 's/round(sum(cb.yield_kg) \/ sum(cb.planned_kg), 4)/round(sum(cb.yield_kg) \/ sum(cb.planned_kg), 2)/' \
    workflows/manufacturing/transforms/site_monthly_yield.sql
sed -i 's/^-- Day calendar for the reporting period/-- One row per day of the reporting period/' \
    transforms/shared/calendar.sql
git_ commit -q -a -m "sites: country_code; yield ratio to 2 decimals; a comment"

# The pipeline.
phlo check
phlo plan --since main -s 'changed+'
phlo ref create "ci-$pr" --from main
phlo --ref "ci-$pr" run --since main -s 'changed+'
phlo --ref "ci-$pr" test
phlo diff --from main --to "ci-$pr" --full
# Written beside the repository: a file in it would be an untracked change of the review.
phlo --ref "ci-$pr" review --base main --fail-on breaking,tests > "$work/review.md"
cat "$work/review.md"
echo "review: $work/review.md" >&2
