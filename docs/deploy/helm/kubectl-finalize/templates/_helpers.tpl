{{/* The chart's name. */}}
{{- define "kubectl-finalize.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The release's fullname: the name of every object it makes. */}}
{{- define "kubectl-finalize.fullname" -}}
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

{{- define "kubectl-finalize.selectorLabels" -}}
app.kubernetes.io/name: {{ include "kubectl-finalize.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "kubectl-finalize.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "kubectl-finalize.selectorLabels" . }}
app.kubernetes.io/version: {{ .Values.image.tag | default .Chart.AppVersion | trunc 63 | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "kubectl-finalize.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "kubectl-finalize.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/*
repository:tag, or repository:tag@digest when a digest is given: image.digest, or the
release's digest of the appVersion's image when the tag is the appVersion's.
*/}}
{{- define "kubectl-finalize.image" -}}
{{- $tag := .Values.image.tag | default .Chart.AppVersion }}
{{- $digest := .Values.image.digest }}
{{- if and (not $digest) (eq $tag .Chart.AppVersion) }}
{{- $digest = .Values.image.releaseDigest }}
{{- end }}
{{- if $digest }}
{{- printf "%s:%s@%s" .Values.image.repository $tag $digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository $tag }}
{{- end }}
{{- end }}

{{/* The ConfigMap that holds the policy. */}}
{{- define "kubectl-finalize.policyConfigMap" -}}
{{- if and .Values.policy.content .Values.policy.existingConfigMap }}
{{- fail "set one of policy.content and policy.existingConfigMap, not both" }}
{{- end }}
{{- if .Values.policy.existingConfigMap }}
{{- .Values.policy.existingConfigMap }}
{{- else if .Values.policy.content }}
{{- printf "%s-policy" (include "kubectl-finalize.fullname" .) }}
{{- else }}
{{- fail "no policy: pass one with --set-file policy.content=policy.yaml, or name an existing ConfigMap with policy.existingConfigMap" }}
{{- end }}
{{- end }}

{{/* The policy's argument. */}}
{{- define "kubectl-finalize.policyArg" -}}
{{- printf "--policy=/etc/kubectl-finalize/%s" .Values.policy.key }}
{{- end }}

{{/*
The pod both shapes run, from a dict: root (the chart's context), args (a list: every
argument is a YAML string, whatever a value holds), and the optional lists env, mounts,
volumes and the dict container (more fields of the container). Restricted Pod Security
is not a value: its fields are set here, and values may only add the user and groups.
*/}}
{{- define "kubectl-finalize.podSpec" -}}
{{- $ := .root -}}
{{- $podSC := dict "runAsNonRoot" true "seccompProfile" (dict "type" "RuntimeDefault") }}
{{- $podSC = merge $podSC (deepCopy $.Values.podSecurityContext) }}
{{- $env := .env | default list }}
{{- range $.Values.credentials.env }}
{{- $ref := dict "name" .secretName "key" .key }}
{{- if hasKey . "optional" }}{{- $_ := set $ref "optional" .optional }}{{- end }}
{{- $env = append $env (dict "name" .name "valueFrom" (dict "secretKeyRef" $ref)) }}
{{- end }}
{{- $mounts := list (dict "name" "policy" "mountPath" "/etc/kubectl-finalize" "readOnly" true) }}
{{- $volumes := list (dict "name" "policy" "configMap" (dict "name" (include "kubectl-finalize.policyConfigMap" $))) }}
{{- range $i, $f := $.Values.credentials.files }}
{{- $mounts = append $mounts (dict "name" (printf "credentials-%d" $i) "mountPath" $f.mountPath "readOnly" true) }}
{{- $secret := dict "secretName" $f.secretName }}
{{- if hasKey $f "optional" }}{{- $_ := set $secret "optional" $f.optional }}{{- end }}
{{- with $f.items }}{{- $_ := set $secret "items" . }}{{- end }}
{{- $volumes = append $volumes (dict "name" (printf "credentials-%d" $i) "secret" $secret) }}
{{- end }}
{{- $mounts = concat $mounts (.mounts | default list) }}
{{- $volumes = concat $volumes (.volumes | default list) }}
{{- $container := dict "name" "reconcile" "image" (include "kubectl-finalize.image" $) "imagePullPolicy" $.Values.image.pullPolicy
      "args" (concat .args $.Values.extraArgs)
      "securityContext" (dict "allowPrivilegeEscalation" false "readOnlyRootFilesystem" true "capabilities" (dict "drop" (list "ALL")))
      "resources" $.Values.resources "volumeMounts" $mounts }}
{{- if $env }}{{- $_ := set $container "env" $env }}{{- end }}
{{- $container = merge $container (.container | default dict) }}
{{- $spec := dict "serviceAccountName" (include "kubectl-finalize.serviceAccountName" $) "securityContext" $podSC
      "containers" (list $container) "volumes" $volumes }}
{{- with $.Values.imagePullSecrets }}{{- $_ := set $spec "imagePullSecrets" . }}{{- end }}
{{- with $.Values.priorityClassName }}{{- $_ := set $spec "priorityClassName" . }}{{- end }}
{{- with $.Values.nodeSelector }}{{- $_ := set $spec "nodeSelector" . }}{{- end }}
{{- with $.Values.tolerations }}{{- $_ := set $spec "tolerations" . }}{{- end }}
{{- with $.Values.affinity }}{{- $_ := set $spec "affinity" . }}{{- end }}
{{- $spec = merge $spec (.spec | default dict) }}
{{- toYaml $spec }}
{{- end }}
