{{/* The chart's name (nameOverride replaces it in names and the app.kubernetes.io/name label). */}}
{{- define "harmonic.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The release's base name, Helm's convention: fullnameOverride, else RELEASE-CHART, or RELEASE alone
when it already contains the chart's name. Every object's name derives from it, so two releases in one
namespace never share an object, a Lease or a label selector. */}}
{{- define "harmonic.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 52 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 52 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 52 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/* The scheduler's or the extender's objects: BASE-scheduler or BASE-extender (release "harmonic":
harmonic-scheduler, harmonic-extender). The base is cut to 52 characters so these fit in 63. */}}
{{- define "harmonic.componentName" -}}
{{- printf "%s-%s" (include "harmonic.fullname" .) .Values.mode }}
{{- end }}

{{/* The rescheduler's objects: BASE-rescheduler. */}}
{{- define "harmonic.reschedulerName" -}}
{{- printf "%s-rescheduler" (include "harmonic.fullname" .) }}
{{- end }}

{{- define "harmonic.reschedulerLeaseName" -}}
{{- default (include "harmonic.reschedulerName" .) .Values.rescheduler.leaseName }}
{{- end }}

{{- define "harmonic.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "harmonic.componentName" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "harmonic.leaseName" -}}
{{- default (include "harmonic.componentName" .) .Values.scheduler.leaseName }}
{{- end }}

{{/* Labels every object carries (Kubernetes' recommended labels and Helm's chart label). */}}
{{- define "harmonic.commonLabels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: harmonic
{{- end }}

{{- define "harmonic.selectorLabels" -}}
app.kubernetes.io/name: {{ include "harmonic.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: {{ .Values.mode }}
{{- end }}

{{- define "harmonic.labels" -}}
{{ include "harmonic.selectorLabels" . }}
{{ include "harmonic.commonLabels" . }}
{{- end }}

{{- define "harmonic.reschedulerSelectorLabels" -}}
app.kubernetes.io/name: {{ include "harmonic.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: rescheduler
{{- end }}

{{- define "harmonic.reschedulerLabels" -}}
{{ include "harmonic.reschedulerSelectorLabels" . }}
{{ include "harmonic.commonLabels" . }}
{{- end }}

{{- define "harmonic.scheme" -}}
{{- if .Values.extender.tls.secretName }}HTTPS{{ else }}HTTP{{ end }}
{{- end }}

{{/* The port /metrics is served on: the scheduler's metrics port, or the extender's own. */}}
{{- define "harmonic.portName" -}}
{{- if eq .Values.mode "scheduler" }}metrics{{ else }}extender{{ end }}
{{- end }}
