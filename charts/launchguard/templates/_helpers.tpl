{{/* Names, labels and the pieces several templates share. */}}

{{- define "launchguard.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "launchguard.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "launchguard.selectorLabels" -}}
app.kubernetes.io/name: {{ include "launchguard.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "launchguard.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "launchguard.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/component: admission-webhook
{{- end -}}

{{- define "launchguard.image" -}}
{{- if .Values.image.digest -}}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest -}}
{{- else -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}
{{- end -}}

{{/* The Secret holding tls.crt, tls.key and ca.crt, in either TLS mode. */}}
{{- define "launchguard.tlsSecretName" -}}
{{- printf "%s-tls" (include "launchguard.fullname" .) -}}
{{- end -}}

{{/* The DNS names the API server uses for the Service (it sends SNI <svc>.<ns>.svc). */}}
{{- define "launchguard.dnsNames" -}}
{{- $svc := include "launchguard.fullname" . -}}
{{- $ns := .Release.Namespace -}}
{{- list $svc (printf "%s.%s" $svc $ns) (printf "%s.%s.svc" $svc $ns) (printf "%s.%s.svc.cluster.local" $svc $ns) | toJson -}}
{{- end -}}

{{/*
The namespaces the webhooks never see: the release's own (so the webhook never
blocks its own pods) and kube-system (so it never blocks the control plane),
then any the values add. Returned as JSON.
*/}}
{{- define "launchguard.excludedNamespaces" -}}
{{- $always := list .Release.Namespace "kube-system" -}}
{{- concat $always .Values.namespaceSelector.excludeNamespaces | uniq | toJson -}}
{{- end -}}

{{- define "launchguard.namespaceSelector" -}}
{{- $ns := .Values.namespaceSelector -}}
matchExpressions:
  - key: kubernetes.io/metadata.name
    operator: NotIn
    values: {{ include "launchguard.excludedNamespaces" . }}
{{- if eq $ns.mode "opt-in" }}
  - key: {{ $ns.label | quote }}
    operator: In
    values: ["enabled"]
{{- else }}
  - key: {{ $ns.label | quote }}
    operator: NotIn
    values: ["disabled"]
{{- end }}
{{- end -}}

{{/*
The workloads launchguard-webhook understands, at the API versions it decodes.
Pods and Jobs are checked on CREATE only (a Job's pod template cannot be
changed once created, a pod's spec barely); the custom workloads also on
UPDATE, because their operators create pods from templates users may edit
after creation.
*/}}
{{- define "launchguard.rules" -}}
- operations: ["CREATE"]
  apiGroups: [""]
  apiVersions: ["v1"]
  resources: ["pods"]
  scope: Namespaced
- operations: ["CREATE"]
  apiGroups: ["batch"]
  apiVersions: ["v1"]
  resources: ["jobs"]
  scope: Namespaced
- operations: ["CREATE", "UPDATE"]
  apiGroups: ["jobset.x-k8s.io"]
  apiVersions: ["v1alpha2"]
  resources: ["jobsets"]
  scope: Namespaced
- operations: ["CREATE", "UPDATE"]
  apiGroups: ["kubeflow.org"]
  apiVersions: ["v2beta1"]
  resources: ["mpijobs"]
  scope: Namespaced
- operations: ["CREATE", "UPDATE"]
  apiGroups: ["kubeflow.org"]
  apiVersions: ["v1"]
  resources: ["pytorchjobs"]
  scope: Namespaced
{{- end -}}

{{/*
Self-managed TLS: the Secret `lookup` finds in the cluster (empty under helm
template and --dry-run, where Helm does not contact the API server), or the
test-only stand-in tls.selfManaged.lookupOverride.
*/}}
{{- define "launchguard.existingTLSSecret" -}}
{{- $override := .Values.tls.selfManaged.lookupOverride -}}
{{- if $override -}}
{{- toJson $override -}}
{{- else -}}
{{- toJson (lookup "v1" "Secret" .Release.Namespace (include "launchguard.tlsSecretName" .) | default dict) -}}
{{- end -}}
{{- end -}}

{{/*
Self-managed TLS material, decided once per render and cached in .Values so
the Secret and both webhook configurations agree: the existing Secret's CA and
certificate when it is one this chart made for the same DNS names and it does
not expire within renewBeforeDays; otherwise a new CA and certificate, with the
old CA kept in the caBundle so pods still serving the old certificate (until
the kubelet refreshes the mounted Secret) stay trusted. Returns JSON with
keys crt, key, ca (base64 PEM), caBundle (base64 PEM), notAfter (RFC 3339),
reused (bool).
*/}}
{{- define "launchguard.selfManagedTLS" -}}
{{- if not (hasKey .Values.tls.selfManaged "_rendered") -}}
{{- $cfg := .Values.tls.selfManaged -}}
{{- $dnsNames := include "launchguard.dnsNames" . | fromJsonArray -}}
{{- $dnsKey := join "," $dnsNames -}}
{{- $existing := include "launchguard.existingTLSSecret" . | fromJson -}}
{{- $data := get $existing "data" | default dict -}}
{{- $annotations := (get $existing "metadata" | default dict).annotations | default dict -}}
{{- $notAfter := get $annotations "launchguard.dev/not-after" -}}
{{- $fresh := false -}}
{{- if and $notAfter (get $data "tls.crt") (get $data "tls.key") (get $data "ca.crt") (eq (get $annotations "launchguard.dev/dns-names") $dnsKey) -}}
{{- $expires := toDate "2006-01-02T15:04:05Z07:00" $notAfter | unixEpoch | atoi -}}
{{- $renewAt := now | dateModify (printf "+%dh" (mul (int $cfg.renewBeforeDays) 24)) | unixEpoch | atoi -}}
{{- $fresh = gt $expires $renewAt -}}
{{- end -}}
{{- $result := dict -}}
{{- if $fresh -}}
{{- $result = dict "crt" (get $data "tls.crt") "key" (get $data "tls.key") "ca" (get $data "ca.crt") "caBundle" (get $data "ca.crt") "notAfter" $notAfter "reused" true -}}
{{- else -}}
{{- $days := int $cfg.validityDays -}}
{{- $svc := include "launchguard.fullname" . -}}
{{- $ca := genCA (printf "%s-ca.%s" $svc .Release.Namespace) $days -}}
{{- $cert := genSignedCert (printf "%s.%s.svc" $svc .Release.Namespace) nil $dnsNames $days $ca -}}
{{- $caB64 := $ca.Cert | b64enc -}}
{{- $bundle := $ca.Cert -}}
{{- with get $data "ca.crt" -}}
{{- $bundle = printf "%s\n%s" (trimSuffix "\n" $ca.Cert) (b64dec .) -}}
{{- end -}}
{{- $notAfterNew := dateInZone "2006-01-02T15:04:05Z07:00" (now | dateModify (printf "+%dh" (mul $days 24))) "UTC" -}}
{{- $result = dict "crt" ($cert.Cert | b64enc) "key" ($cert.Key | b64enc) "ca" $caB64 "caBundle" ($bundle | b64enc) "notAfter" $notAfterNew "reused" false -}}
{{- end -}}
{{- $_ := set .Values.tls.selfManaged "_rendered" $result -}}
{{- end -}}
{{- toJson .Values.tls.selfManaged._rendered -}}
{{- end -}}

{{/* caBundle or the cert-manager annotation: what each webhook configuration needs to trust the webhook. */}}
{{- define "launchguard.caInjectionAnnotation" -}}
{{- if eq .Values.tls.mode "cert-manager" -}}
cert-manager.io/inject-ca-from: {{ printf "%s/%s" .Release.Namespace (include "launchguard.tlsSecretName" .) }}
{{- end -}}
{{- end -}}

{{- define "launchguard.clientConfig" -}}
service:
  name: {{ include "launchguard.fullname" .root }}
  namespace: {{ .root.Release.Namespace }}
  path: {{ .path }}
  port: {{ .root.Values.service.port }}
{{- if eq .root.Values.tls.mode "self-managed" }}
caBundle: {{ (include "launchguard.selfManagedTLS" .root | fromJson).caBundle }}
{{- end }}
{{- end -}}
