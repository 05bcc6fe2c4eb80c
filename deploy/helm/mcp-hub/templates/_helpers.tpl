{{/*
Names, labels and the pieces the hub Deployment and the migration Job share.
*/}}

{{/* The chart name, or nameOverride. */}}
{{- define "mcp-hub.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* RELEASE-mcp-hub (or just RELEASE when it already holds the name), or fullnameOverride. */}}
{{- define "mcp-hub.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/* chart label: name-version */}}
{{- define "mcp-hub.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Labels of every object. */}}
{{- define "mcp-hub.labels" -}}
helm.sh/chart: {{ include "mcp-hub.chart" . }}
app.kubernetes.io/name: {{ include "mcp-hub.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/* Selector of the serving pods (the migration Job's pods carry component=migrate instead). */}}
{{- define "mcp-hub.selectorLabels" -}}
app.kubernetes.io/name: {{ include "mcp-hub.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: server
{{- end }}

{{/* repository:tag, the tag defaulting to the chart's appVersion. */}}
{{- define "mcp-hub.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}

{{/* The Secret the replicas read. */}}
{{- define "mcp-hub.secretName" -}}
{{- default (include "mcp-hub.fullname" .) .Values.secrets.existingSecret }}
{{- end }}

{{/* The Secret the migration Job reads: the existing one, or the chart's hook Secret. */}}
{{- define "mcp-hub.migrationSecretName" -}}
{{- if .Values.secrets.existingSecret }}
{{- .Values.secrets.existingSecret }}
{{- else }}
{{- printf "%s-migration" (include "mcp-hub.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}

{{/* The key of the migration Job's HUB_DATABASE_URL in its Secret. */}}
{{- define "mcp-hub.migrationUrlKey" -}}
{{- if and .Values.secrets.existingSecret .Values.migration.separateDatabaseUrl }}
{{- "migration-database-url" }}
{{- else }}
{{- "database-url" }}
{{- end }}
{{- end }}

{{/*
The settings config may hold: every HUB_ variable the hub reads (hub/core/settings.py) but the
secrets and what the chart sets itself. tests/deploy/test_helm_checks.py keeps this list equal to
the hub's, so a misspelt name fails the render instead of being silently ignored.
*/}}
{{- define "mcp-hub.settingNames" -}}
HUB_ENV HUB_DATA_DIR HUB_DATABASE_POOL_SIZE HUB_DATABASE_STATEMENT_TIMEOUT_S HUB_ALLOW_LOOPBACK HUB_EGRESS_ALLOW_CIDRS
HUB_EXTRA_ORIGINS HUB_TLS_CA_FILE HUB_DISCOVERY_TIMEOUT_S HUB_TOOL_CALL_TIMEOUT_S
HUB_UPSTREAM_SESSION_IDLE_S HUB_MAX_RESPONSE_BYTES HUB_MAX_OPERATION_BYTES
HUB_EGRESS_MAX_PER_ORIGIN HUB_EGRESS_MAX_PER_TENANT_ORIGIN HUB_APPROVAL_WAIT_S HUB_APPROVAL_TTL_S
HUB_APPROVAL_USE_S HUB_APPROVAL_ARGUMENTS_KEEP_S HUB_MAX_TOOL_RESULT_BYTES HUB_GATEWAY_CACHE_BYTES
HUB_ALLOWED_ORIGINS HUB_DRIFT_POLICY HUB_DRIFT_INTERVAL_S HUB_CONSOLE_IDLE_S HUB_RATE_LIMITS
HUB_WORKERS HUB_WORKER_POLL_S HUB_WORKER_CONCURRENCY HUB_SHUTDOWN_GRACE_S HUB_MAX_REQUEST_BYTES
HUB_MAX_PENDING_REQUEST_BYTES HUB_MAX_CONNECTIONS HUB_MAX_PENDING_APPROVALS
HUB_MAX_GRANTS_PER_PRINCIPAL HUB_TRUSTED_PROXIES HUB_LOG_LEVEL HUB_PUBLIC_URL
HUB_OAUTH_CLIENT_ID_URL HUB_OAUTH_REFRESH_AHEAD_S HUB_OAUTH_REFRESH_INTERVAL_S
{{- end }}

{{/* config's value as the hub reads it: a whole number as digits (Helm reads every number in a
values file as a float, and 4194304 would print as 4.194304e+06), text and booleans as they are. */}}
{{- define "mcp-hub.settingText" -}}
{{- $value := .value }}
{{- if kindIs "invalid" $value }}
{{- else if kindIs "float64" $value }}
{{- if eq $value (float64 (int64 $value)) }}{{ int64 $value }}{{ else }}{{ $value }}{{ end }}
{{- else if or (kindIs "string" $value) (kindIs "bool" $value) (kindIs "int" $value) (kindIs "int64" $value) }}
{{- $value }}
{{- else }}
{{- fail (printf "config.%s: a setting is text, a number or a boolean (JSON settings such as HUB_EXTRA_ORIGINS go in quotes)" .key) }}
{{- end }}
{{- end }}

{{/* HUB_PUBLIC_URL: config's, else the first Ingress host (https when the Ingress has TLS). */}}
{{- define "mcp-hub.publicUrl" -}}
{{- if .Values.config.HUB_PUBLIC_URL }}
{{- .Values.config.HUB_PUBLIC_URL }}
{{- else if and .Values.ingress.enabled .Values.ingress.hosts }}
{{- printf "http%s://%s" (ternary "s" "" (not (empty .Values.ingress.tls))) (first .Values.ingress.hosts).host }}
{{- end }}
{{- end }}

{{/*
Non-secret settings: config without empty values, and HUB_PUBLIC_URL from the Ingress when config
has none. Rendering fails when a secret, a setting the chart owns or a name the hub does not read
was put there, so a keyring never lands in a ConfigMap and a typo is never silently ignored.
*/}}
{{- define "mcp-hub.config" -}}
{{- $refused := list "HUB_DATABASE_URL" "HUB_DATABASE_OWNER_URL" "HUB_DATABASE_APP_ROLE" "HUB_ENCRYPTION_KEYS" "HUB_ACTIVE_KEY_ID" "HUB_API_KEY_PEPPER" "HUB_RATE_LIMIT_STORAGE_URL" "HUB_HOST" "HUB_PORT" }}
{{- $known := regexSplit "\\s+" (include "mcp-hub.settingNames" . | trim) -1 }}
{{- range $key, $value := .Values.config }}
{{- if has $key $refused }}
{{- fail (printf "config.%s is not allowed: secrets go in secrets.* (or secrets.existingSecret); HUB_HOST/HUB_PORT come from listenAddress/containerPort" $key) }}
{{- end }}
{{- if not (has $key $known) }}
{{- fail (printf "config.%s: the hub reads no such setting (README \"Configuration\" lists them)" $key) }}
{{- end }}
{{- $text := include "mcp-hub.settingText" (dict "key" $key "value" $value) }}
{{- if and (ne $text "") (ne $key "HUB_PUBLIC_URL") }}
{{ $key }}: {{ $text | quote }}
{{- end }}
{{- end }}
{{- with include "mcp-hub.publicUrl" . }}
HUB_PUBLIC_URL: {{ . | quote }}
{{- end }}
{{- end }}

{{/* The hub's worst-case stop: its drain of requests, then as long again for its workers'
current jobs (HUB_SHUTDOWN_GRACE_S each), after the preStop sleep, plus ten seconds. */}}
{{- define "mcp-hub.stopSeconds" -}}
{{- $grace := include "mcp-hub.settingText" (dict "key" "HUB_SHUTDOWN_GRACE_S" "value" (default "30" .Values.config.HUB_SHUTDOWN_GRACE_S)) | float64 | ceil | int }}
{{- add (int .Values.preStopSleepSeconds) (mul 2 $grace) 10 }}
{{- end }}

{{/* terminationGracePeriodSeconds: the value, or the hub's worst-case stop when it is empty. */}}
{{- define "mcp-hub.terminationGrace" -}}
{{- if eq (toString .Values.terminationGracePeriodSeconds) "" }}
{{- include "mcp-hub.stopSeconds" . }}
{{- else }}
{{- int .Values.terminationGracePeriodSeconds }}
{{- end }}
{{- end }}

{{/*
What no install may render, checked before anything is made (configmap.yaml includes it). Only
on install and upgrade for the values an operator must supply (secrets, the public URL), so that
`helm lint` of the bare chart still passes; always for contradictions.
*/}}
{{- define "mcp-hub.checks" -}}
{{- $installing := or .Release.IsInstall .Release.IsUpgrade }}
{{- if and $installing (include "mcp-hub.secretsMissing" .) }}
{{- fail "secrets.databaseUrl, secrets.encryptionKeys and secrets.apiKeyPepper (or secrets.existingSecret) must all be set: the chart generates no secret, and the migration Job and the hub cannot start without them (deploy/README.md)" }}
{{- end }}
{{- if and $installing (eq (toString .Values.config.HUB_ENV) "production") (not (include "mcp-hub.publicUrl" .)) }}
{{- fail "config.HUB_PUBLIC_URL must be set (or ingress.enabled with a host): the https URL browsers, agents and authorization servers reach the hub at. The console's origin check and Secure cookies, approval links and OAuth redirects are built from it, and production refuses to start without it" }}
{{- end }}
{{- $minimum := int (include "mcp-hub.stopSeconds" .) }}
{{- if lt (int (include "mcp-hub.terminationGrace" .)) $minimum }}
{{- fail (printf "terminationGracePeriodSeconds must be at least %d: preStopSleepSeconds, then HUB_SHUTDOWN_GRACE_S for requests and as long again for the workers' current jobs, plus 10 s (empty: computed)" $minimum) }}
{{- end }}
{{- $pdb := .Values.podDisruptionBudget }}
{{- if and $pdb.enabled (ne (toString $pdb.minAvailable) "") (not (contains "%" (toString $pdb.minAvailable))) }}
{{- $fewest := ternary (int .Values.autoscaling.minReplicas) (int .Values.replicaCount) .Values.autoscaling.enabled }}
{{- if ge (int $pdb.minAvailable) $fewest }}
{{- fail (printf "podDisruptionBudget.minAvailable (%d) must be below the replicas (%d): no node could ever be drained" (int $pdb.minAvailable) $fewest) }}
{{- end }}
{{- end }}
{{- $owned := list "HUB_HOST" "HUB_PORT" "HUB_DATABASE_URL" "HUB_ENCRYPTION_KEYS" "HUB_ACTIVE_KEY_ID" "HUB_API_KEY_PEPPER" "HUB_RATE_LIMIT_STORAGE_URL" "HUB_DATABASE_APP_ROLE" "HUB_DATABASE_OWNER_URL" }}
{{- range .Values.extraEnv }}
{{- if or (has .name $owned) (ne (toString (get $.Values.config .name)) "") }}
{{- fail (printf "extraEnv.%s: the chart sets it already (config, secrets or the chart itself); set it there" .name) }}
{{- end }}
{{- end }}
{{- end }}

{{/* The environment both the replicas and the Job get from a Secret ($secret) and a URL key. */}}
{{- define "mcp-hub.secretEnv" -}}
- name: HUB_DATABASE_URL
  valueFrom:
    secretKeyRef:
      name: {{ .secret }}
      key: {{ .urlKey }}
- name: HUB_ENCRYPTION_KEYS
  valueFrom:
    secretKeyRef:
      name: {{ .secret }}
      key: encryption-keys
- name: HUB_ACTIVE_KEY_ID
  valueFrom:
    secretKeyRef:
      name: {{ .secret }}
      key: active-key-id
      optional: true
- name: HUB_API_KEY_PEPPER
  valueFrom:
    secretKeyRef:
      name: {{ .secret }}
      key: api-key-pepper
- name: HUB_RATE_LIMIT_STORAGE_URL
  valueFrom:
    secretKeyRef:
      name: {{ .secret }}
      key: rate-limit-storage-url
      optional: true
{{- end }}

{{/* True when the chart makes the Secret and a required secret value is missing. */}}
{{- define "mcp-hub.secretsMissing" -}}
{{- if and (not .Values.secrets.existingSecret) (not (and .Values.secrets.databaseUrl .Values.secrets.encryptionKeys .Values.secrets.apiKeyPepper)) }}true{{ end }}
{{- end }}
