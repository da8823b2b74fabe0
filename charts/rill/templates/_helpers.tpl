{{/* Names. Truncated to 40 so "<fullname>-gateway-<hash>" and pod names fit in 63. */}}
{{- define "rill.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 40 | trimSuffix "-" }}
{{- end }}

{{- define "rill.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 40 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 40 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 40 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/* The StatefulSet and its headless Service share this name. */}}
{{- define "rill.brokerName" -}}
{{- printf "%s-broker" (include "rill.fullname" .) }}
{{- end }}

{{- define "rill.gatewayName" -}}
{{- printf "%s-gateway" (include "rill.fullname" .) }}
{{- end }}

{{- define "rill.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}

{{- define "rill.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/name: {{ include "rill.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: rill
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/* Selector labels of one component: (dict "ctx" $ "component" "broker"). */}}
{{- define "rill.selectorLabels" -}}
app.kubernetes.io/name: {{ include "rill.name" .ctx }}
app.kubernetes.io/instance: {{ .ctx.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end }}

{{/* Pod labels: no chart version, so a chart upgrade alone restarts no broker. */}}
{{- define "rill.podLabels" -}}
{{ include "rill.selectorLabels" . }}
app.kubernetes.io/part-of: rill
{{- with .ctx.Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{- define "rill.componentLabels" -}}
{{ include "rill.labels" .ctx }}
app.kubernetes.io/component: {{ .component }}
{{- end }}

{{/* Stable DNS name of broker i: (dict "ctx" $ "index" i). */}}
{{- define "rill.brokerHost" -}}
{{- $name := include "rill.brokerName" .ctx -}}
{{- printf "%s-%d.%s.%s.svc.%s" $name (int .index) $name .ctx.Release.Namespace .ctx.Values.clusterDomain }}
{{- end }}

{{/*
host:port of brokers 0 to size-1 on one port, comma-separated:
(dict "ctx" $ "port" p "size" n).
*/}}
{{- define "rill.brokerAddresses" -}}
{{- $ctx := .ctx -}}
{{- $port := int .port -}}
{{- $addresses := list -}}
{{- range $i := until (int .size) -}}
{{- $addresses = append $addresses (printf "%s:%d" (include "rill.brokerHost" (dict "ctx" $ctx "index" $i)) $port) -}}
{{- end -}}
{{- join "," $addresses -}}
{{- end }}

{{/*
A scalar as Rill reads it from the environment. Values from YAML files arrive as float64,
so whole numbers are printed without an exponent (1000000, not 1e+06).
*/}}
{{- define "rill.envValue" -}}
{{- if and (kindIs "float64" .) (eq (float64 (int64 .)) .) -}}
{{- int64 . -}}
{{- else -}}
{{- toString . -}}
{{- end -}}
{{- end }}

{{/*
One RILL_… variable per option of a map, nested maps becoming sections:
(dict "prefix" "RILL_FLOW_CONTROL__REQUEST__AIMD" "options" $map).
camelCase keys become Rill's names: requestTimeout -> REQUEST_TIMEOUT.
*/}}
{{- define "rill.optionEnv" -}}
{{- $prefix := .prefix -}}
{{- range $key, $value := .options }}
{{- $name := printf "%s__%s" $prefix ($key | snakecase | upper) }}
{{- if kindIs "map" $value }}
{{- include "rill.optionEnv" (dict "prefix" $name "options" $value) }}
{{- else if not (kindIs "invalid" $value) }}
- name: {{ $name }}
  value: {{ include "rill.envValue" $value | quote }}
{{- end }}
{{- end }}
{{- end }}

{{/*
Settings both brokers and the separate gateway read. The cluster's size, partitions and
replication factor are those it was created with (see rill.shape): a scaled cluster's
actual shape is its replicated configuration, which the brokers keep.
*/}}
{{- define "rill.commonEnv" -}}
{{- $created := (include "rill.shape" . | fromJson).created }}
- name: RILL_LOG
  value: {{ .Values.logLevel | quote }}
- name: RILL_LOG_FORMAT
  value: {{ .Values.logFormat | quote }}
- name: RILL_CLUSTER__SIZE
  value: {{ $created.clusterSize | int | quote }}
- name: RILL_CLUSTER__PARTITIONS_COUNT
  value: {{ $created.partitionCount | int | quote }}
- name: RILL_CLUSTER__REPLICATION_FACTOR
  value: {{ $created.replicationFactor | int | quote }}
- name: RILL_CLUSTER__COMMAND_PORT
  value: {{ .Values.service.commandPort | int | quote }}
- name: RILL_CLUSTER__INTERNAL_PORT
  value: {{ .Values.service.internalPort | int | quote }}
{{- with .Values.gateway.requestTimeout }}
- name: RILL_GATEWAY__REQUEST_TIMEOUT
  value: {{ . | quote }}
{{- end }}
{{- with .Values.gateway.longPollingTimeout }}
- name: RILL_GATEWAY__LONG_POLLING_TIMEOUT
  value: {{ . | quote }}
{{- end }}
{{- with .Values.gateway.maxMessageSize }}
- name: RILL_GATEWAY__MAX_MESSAGE_SIZE
  value: {{ . | quote }}
{{- end }}
{{- end }}

{{/* The Elasticsearch exporter's settings, for brokers (the leader of a partition exports). */}}
{{- define "rill.exporterEnv" -}}
{{- $es := .Values.exporters.elasticsearch -}}
{{- if $es.enabled }}
- name: RILL_EXPORTERS__ELASTICSEARCH__URL
  value: {{ $es.url | quote }}
- name: RILL_EXPORTERS__ELASTICSEARCH__INDEX_PREFIX
  value: {{ $es.indexPrefix | quote }}
{{- $auth := $es.auth }}
{{- if $auth.existingSecret }}
{{- if eq $auth.type "basic" }}
- name: RILL_EXPORTERS__ELASTICSEARCH__USERNAME
{{- if $auth.username }}
  value: {{ $auth.username | quote }}
{{- else }}
  valueFrom:
    secretKeyRef:
      name: {{ $auth.existingSecret }}
      key: {{ $auth.usernameKey }}
{{- end }}
- name: RILL_EXPORTERS__ELASTICSEARCH__PASSWORD
  valueFrom:
    secretKeyRef:
      name: {{ $auth.existingSecret }}
      key: {{ $auth.passwordKey }}
{{- else if eq $auth.type "apiKey" }}
- name: RILL_EXPORTERS__ELASTICSEARCH__API_KEY
  valueFrom:
    secretKeyRef:
      name: {{ $auth.existingSecret }}
      key: {{ $auth.apiKeyKey }}
{{- else if eq $auth.type "bearer" }}
- name: RILL_EXPORTERS__ELASTICSEARCH__BEARER_TOKEN
  valueFrom:
    secretKeyRef:
      name: {{ $auth.existingSecret }}
      key: {{ $auth.bearerTokenKey }}
{{- end }}
{{- end }}
- name: RILL_EXPORTERS__ELASTICSEARCH__TLS__VERIFY_CERTIFICATES
  value: {{ ne $es.tls.verifyCertificates false | toString | quote }}
{{- if $es.tls.caSecret }}
- name: RILL_EXPORTERS__ELASTICSEARCH__TLS__CA_CERTIFICATE
  value: {{ printf "/usr/local/rill/elasticsearch-ca/%s" $es.tls.caSecretKey | quote }}
{{- end }}
{{- include "rill.optionEnv" (dict "prefix" "RILL_EXPORTERS__ELASTICSEARCH" "options" $es.options) }}
{{- end }}
{{- end }}

{{/* Flow control: every option the values set, nothing else (Rill's defaults stay). */}}
{{- define "rill.flowControlEnv" -}}
{{- include "rill.optionEnv" (dict "prefix" "RILL_FLOW_CONTROL" "options" .Values.flowControl) }}
{{- end }}

{{/* Pod anti-affinity preset spreading one component over nodes. */}}
{{- define "rill.antiAffinity" -}}
{{- $term := dict "topologyKey" "kubernetes.io/hostname" "labelSelector" (dict "matchLabels" (include "rill.selectorLabels" . | fromYaml)) -}}
{{- if eq .preset "hard" }}
podAntiAffinity:
  requiredDuringSchedulingIgnoredDuringExecution:
    - {{ toYaml $term | nindent 6 | trim }}
{{- else if eq .preset "soft" }}
podAntiAffinity:
  preferredDuringSchedulingIgnoredDuringExecution:
    - weight: 100
      podAffinityTerm:
        {{- toYaml $term | nindent 8 }}
{{- end }}
{{- end }}

{{/*
Checks values.schema.json cannot express (it cannot compare two fields). Each message
names the value at fault and the fix.
*/}}
{{- define "rill.validate" -}}
{{- $size := int .Values.clusterSize -}}
{{- $rf := int .Values.replicationFactor -}}
{{- if gt $rf $size }}
{{- fail (printf "replicationFactor (%d) is greater than clusterSize (%d): every replica of a partition needs a broker of its own. Lower replicationFactor to at most %d or raise clusterSize to at least %d." $rf $size $size $rf) }}
{{- end }}
{{- if .Values.podDisruptionBudget.enabled }}
{{- $tolerated := div (sub $rf 1) 2 | int -}}
{{- $allowed := max 1 $tolerated | int -}}
{{- if gt (int .Values.podDisruptionBudget.maxUnavailable) $allowed }}
{{- fail (printf "podDisruptionBudget.maxUnavailable (%d) would take more replicas of a partition down than its quorum allows with replicationFactor %d: use at most %d." (int .Values.podDisruptionBudget.maxUnavailable) $rf $allowed) }}
{{- end }}
{{- end }}
{{- $es := .Values.exporters.elasticsearch -}}
{{- if and $es.enabled (not $es.url) }}
{{- fail "exporters.elasticsearch.enabled is true but exporters.elasticsearch.url is empty: set it to http://host:9200 or https://host:9200." }}
{{- end }}
{{- range $key := list "url" "indexPrefix" "username" "password" "apiKey" "bearerToken" "tls" }}
{{- if hasKey $es.options $key }}
{{- fail (printf "exporters.elasticsearch.options.%s is managed by the chart: set it through exporters.elasticsearch.url, indexPrefix, auth or tls instead." $key) }}
{{- end }}
{{- end }}
{{- if and $es.auth.username (ne $es.auth.type "basic") }}
{{- fail (printf "exporters.elasticsearch.auth.username is set but auth.type is %s: a username goes with basic auth only." $es.auth.type) }}
{{- end }}
{{- if and $es.auth.username (not $es.auth.existingSecret) }}
{{- fail "exporters.elasticsearch.auth.username is set but auth.existingSecret is empty: name the Secret that holds the password." }}
{{- end }}
{{- range $section := list "gateway" "cluster" "monitoring" }}
{{- $tls := index $.Values.tls $section }}
{{- if and $tls.enabled (not $tls.secretName) }}
{{- fail (printf "tls.%s.enabled is true but tls.%s.secretName is empty: name the Secret (type kubernetes.io/tls, as cert-manager writes it) that holds tls.crt and tls.key%s." $section $section (ternary " and ca.crt" "" (eq $section "cluster"))) }}
{{- end }}
{{- end }}
{{- $auth := include "rill.authentication" . | fromJson -}}
{{- if and (ne $auth.method "basic") $auth.existingSecret }}
{{- fail (printf "authentication.existingSecret is %s but authentication.method is %s: nothing would read the password. Set authentication.method to basic, or clear existingSecret." $auth.existingSecret $auth.method) }}
{{- end }}
{{- if eq $auth.method "oidc" }}
{{- $oidc := $auth.oidc }}
{{- if not $oidc.issuerUri }}
{{- fail "authentication.method is oidc but authentication.oidc.issuerUri is empty: set the provider's issuer URL (the tokens' iss)." }}
{{- end }}
{{- if not (hasPrefix "https://" $oidc.issuerUri) }}
{{- fail (printf "authentication.oidc.issuerUri %s is not https://: Rill accepts http:// only on a loopback address, which the pods' provider cannot be." $oidc.issuerUri) }}
{{- end }}
{{- if not $oidc.audiences }}
{{- fail "authentication.method is oidc but authentication.oidc.audiences is empty: list the audiences (aud) the tokens for Rill carry." }}
{{- end }}
{{- range $key := list "id" "existingSecret" "tokenUrl" }}
{{- if not (get $oidc.client $key) }}
{{- fail (printf "authentication.method is oidc but authentication.oidc.client.%s is empty: the chart's scale Jobs call the management API with a token of this OAuth client (client credentials grant); set client.id, client.existingSecret (holding the secret under client.secretKey) and client.tokenUrl." $key) }}
{{- end }}
{{- end }}
{{- with lookup "v1" "Secret" .Release.Namespace $oidc.client.existingSecret }}
{{- if not (hasKey (.data | default dict) $oidc.client.secretKey) }}
{{- fail (printf "authentication.oidc.client.existingSecret %s has no key %s (authentication.oidc.client.secretKey): it has %s." $oidc.client.existingSecret $oidc.client.secretKey (keys (.data | default dict) | sortAlpha | join ", " | default "none")) }}
{{- end }}
{{- end }}
{{- end }}
{{- if and (eq $auth.method "basic") $auth.existingSecret }}
{{- /* Only a Secret `lookup` finds can be checked: it finds none without the cluster. */ -}}
{{- with lookup "v1" "Secret" .Release.Namespace $auth.existingSecret }}
{{- if not (hasKey (.data | default dict) $auth.passwordKey) }}
{{- fail (printf "authentication.existingSecret %s has no key %s (authentication.passwordKey): it has %s. Set passwordKey to the key that holds the admin password." $auth.existingSecret $auth.passwordKey (keys (.data | default dict) | sortAlpha | join ", " | default "none")) }}
{{- end }}
{{- end }}
{{- end }}
{{- if and .Values.gateway.ingress.enabled (not .Values.gateway.ingress.host) }}
{{- fail "gateway.ingress.enabled is true but gateway.ingress.host is empty: set the host name the REST API is served on." }}
{{- end }}
{{- $ports := dict -}}
{{- range $name, $port := dict "service.commandPort" .Values.service.commandPort "service.internalPort" .Values.service.internalPort "service.httpPort" .Values.service.httpPort -}}
{{- $_ := set $ports (toString (int $port)) (append (get $ports (toString (int $port)) | default list) $name) -}}
{{- end -}}
{{- if .Values.gateway.embedded }}
{{- range $name, $port := dict "gateway.service.restPort" .Values.gateway.service.restPort "gateway.service.grpcPort" .Values.gateway.service.grpcPort -}}
{{- $_ := set $ports (toString (int $port)) (append (get $ports (toString (int $port)) | default list) $name) -}}
{{- end -}}
{{- end }}
{{- range $port, $names := $ports }}
{{- if gt (len $names) 1 }}
{{- fail (printf "%s share port %s in the broker pods: give each a port of its own." (join " and " (sortAlpha $names)) $port) }}
{{- end }}
{{- end }}
{{- end }}

{{/*
The cluster's shape as JSON: "values" (what this release asks for), "created" (what the
brokers' settings say: cluster.size, partitions-count and replication-factor stay those
the cluster was created with, as every broker a scale-up adds must start with them), and
"running" (what the last release applied; empty on a first install). `lookup` reads the
StatefulSet in the cluster; it finds nothing in `helm template` or a client-side dry run.
*/}}
{{- define "rill.shape" -}}
{{- $values := dict "clusterSize" (int .Values.clusterSize) "partitionCount" (int .Values.partitionCount) "replicationFactor" (int .Values.replicationFactor) -}}
{{- $created := $values -}}
{{- $pinned := .Values.initialCluster | default dict -}}
{{- if $pinned.clusterSize }}
{{- $created = dict "clusterSize" (int $pinned.clusterSize) "partitionCount" (int (required "initialCluster.partitionCount: set it with initialCluster.clusterSize, to the partitionCount the cluster was created with" $pinned.partitionCount)) "replicationFactor" (int (required "initialCluster.replicationFactor: set it with initialCluster.clusterSize, to the replicationFactor the cluster was created with" $pinned.replicationFactor)) -}}
{{- end }}
{{- $running := dict -}}
{{- $existing := lookup "apps/v1" "StatefulSet" .Release.Namespace (include "rill.brokerName" .) -}}
{{- if and $existing (not .Values.allowTopologyChange) }}
{{- $env := dict -}}
{{- range $container := $existing.spec.template.spec.containers }}
{{- if eq $container.name "broker" }}
{{- range $entry := $container.env }}
{{- if hasKey $entry "value" }}
{{- $_ := set $env $entry.name $entry.value -}}
{{- end }}
{{- end }}
{{- end }}
{{- end }}
{{- $deployed := dict "clusterSize" (get $env "RILL_CLUSTER__SIZE" | default $created.clusterSize | int) "partitionCount" (get $env "RILL_CLUSTER__PARTITIONS_COUNT" | default $created.partitionCount | int) "replicationFactor" (get $env "RILL_CLUSTER__REPLICATION_FACTOR" | default $created.replicationFactor | int) -}}
{{- if $pinned.clusterSize }}
{{- range $key := list "clusterSize" "partitionCount" "replicationFactor" }}
{{- if ne (int (get $deployed $key)) (int (get $created $key)) }}
{{- fail (printf "initialCluster.%s is %d, but the running brokers were created with %s=%d: set initialCluster.%s to %d (or leave initialCluster empty: helm upgrade reads it from the cluster)." $key (int (get $created $key)) $key (int (get $deployed $key)) $key (int (get $deployed $key))) }}
{{- end }}
{{- end }}
{{- end }}
{{- $created = $deployed -}}
{{- $annotations := $existing.metadata.annotations | default dict -}}
{{- $running = dict "clusterSize" (get $annotations "rill/cluster-size" | default $created.clusterSize | int) "partitionCount" (get $annotations "rill/partition-count" | default $created.partitionCount | int) "replicationFactor" (get $annotations "rill/replication-factor" | default $created.replicationFactor | int) -}}
{{- end }}
{{- toJson (dict "values" $values "created" $created "running" $running) -}}
{{- end }}

{{/*
On upgrade: what of a new shape the chart refuses, naming the value. Everything else is
the scale Jobs' work (templates/broker-scale-jobs.yaml).
*/}}
{{- define "rill.checkScaling" -}}
{{- $shape := include "rill.shape" . | fromJson -}}
{{- with $shape.running }}
{{- $created := $shape.created -}}
{{- $values := $shape.values -}}
{{- if lt (int $values.partitionCount) (int .partitionCount) }}
{{- fail (printf "partitionCount is %d in the running cluster and would become %d: partitions can only be added, never removed (their instances, messages and keys live there). Keep partitionCount at %d or more." (int .partitionCount) (int $values.partitionCount) (int .partitionCount)) }}
{{- end }}
{{- $changed := or (ne (int $values.clusterSize) (int .clusterSize)) (ne (int $values.partitionCount) (int .partitionCount)) (ne (int $values.replicationFactor) (int .replicationFactor)) -}}
{{- if and $changed (eq (int $created.clusterSize) 1) }}
{{- fail (printf "clusterSize, partitionCount and replicationFactor cannot change: this cluster was created with clusterSize 1, a single broker without an internal port, which cannot be scaled. Keep clusterSize=1, partitionCount=%d, replicationFactor=%d, or install a new release with the size you need." (int .partitionCount) (int .replicationFactor)) }}
{{- end }}
{{- end }}
{{- end }}

{{/*
TLS of the ports a pod serves: `sections` lists which of tls.gateway, tls.cluster and
tls.monitoring apply to it. Each enabled one mounts its Secret as a directory (a renewed
certificate reaches the pod; Rill reloads it) and points Rill's settings at its files.
*/}}
{{- define "rill.tlsEnv" -}}
{{- $ctx := .ctx }}
{{- range $section := .sections }}
{{- $tls := index $ctx.Values.tls $section }}
{{- if $tls.enabled }}
{{- $prefix := printf "RILL_%s__TLS" (upper $section) }}
- name: {{ $prefix }}__ENABLED
  value: "true"
- name: {{ $prefix }}__CERTIFICATE
  value: /usr/local/rill/tls/{{ $section }}/tls.crt
- name: {{ $prefix }}__PRIVATE_KEY
  value: /usr/local/rill/tls/{{ $section }}/tls.key
{{- if eq $section "cluster" }}
- name: {{ $prefix }}__CA
  value: /usr/local/rill/tls/{{ $section }}/ca.crt
{{- end }}
{{- end }}
{{- end }}
{{- end }}

{{- define "rill.tlsVolumeMounts" -}}
{{- $ctx := .ctx }}
{{- range $section := .sections }}
{{- if (index $ctx.Values.tls $section).enabled }}
- name: tls-{{ $section }}
  mountPath: /usr/local/rill/tls/{{ $section }}
  readOnly: true
{{- end }}
{{- end }}
{{- end }}

{{- define "rill.tlsVolumes" -}}
{{- $ctx := .ctx }}
{{- range $section := .sections }}
{{- $tls := index $ctx.Values.tls $section }}
{{- if $tls.enabled }}
- name: tls-{{ $section }}
  secret:
    secretName: {{ $tls.secretName }}
{{- end }}
{{- end }}
{{- end }}

{{/* The scheme of the monitoring port: probes, scrapes and the scale Jobs use it. */}}
{{- define "rill.monitoringScheme" -}}
{{- if .Values.tls.monitoring.enabled }}HTTPS{{ else }}HTTP{{ end }}
{{- end }}

{{/*
Authentication. The admin password lives in a Secret only: the user's (existingSecret) or
the one the chart generates (templates/admin-secret.yaml); pods read it by secretKeyRef.

rill.authentication: the values as JSON, with the defaults of values.yaml where a key is
missing. `helm upgrade --reuse-values` keeps the values of the chart the release was
installed with, which may predate authentication: then the method must be chosen.
*/}}
{{- define "rill.authentication" -}}
{{- $auth := .Values.authentication | default dict -}}
{{- if not $auth.method }}
{{- fail "authentication.method is not set: the release's values come from a chart without authentication (helm upgrade --reuse-values keeps them). Upgrade with --reset-then-reuse-values to take the new default, basic authentication with a generated admin password, or add --set authentication.method=basic (or none to keep the API open)." }}
{{- end }}
{{- $oidc := $auth.oidc | default dict -}}
{{- $client := $oidc.client | default dict -}}
{{- $oidcValues := dict "issuerUri" ($oidc.issuerUri | default "") "audiences" ($oidc.audiences | default list) "usernameClaim" ($oidc.usernameClaim | default "sub") "clientIdClaim" ($oidc.clientIdClaim | default "") "groupsClaim" ($oidc.groupsClaim | default "") "clockSkew" ($oidc.clockSkew | default "60s") "client" (dict "id" ($client.id | default "") "existingSecret" ($client.existingSecret | default "") "secretKey" ($client.secretKey | default "client-secret") "tokenUrl" ($client.tokenUrl | default "") "audience" ($client.audience | default "")) -}}
{{- toJson (dict "method" $auth.method "username" ($auth.username | default "admin") "existingSecret" ($auth.existingSecret | default "") "passwordKey" ($auth.passwordKey | default "password") "oidc" $oidcValues) -}}
{{- end }}

{{/*
The credentials of the OAuth client the scale Jobs use with oidc, in the form of
rill.credentials, or {} when authentication.oidc.client is not set.
*/}}
{{- define "rill.oidcClientCredentials" -}}
{{- $client := (include "rill.authentication" . | fromJson).oidc.client -}}
{{- if and $client.id $client.existingSecret $client.tokenUrl -}}
{{- toJson (dict "method" "oidc" "clientId" $client.id "secretName" $client.existingSecret "secretKey" $client.secretKey "tokenUrl" $client.tokenUrl "audience" $client.audience) -}}
{{- else -}}
{{- toJson dict -}}
{{- end -}}
{{- end }}

{{- define "rill.adminSecretName" -}}
{{- $auth := include "rill.authentication" . | fromJson -}}
{{- $auth.existingSecret | default (printf "%s-admin" (include "rill.fullname" .)) }}
{{- end }}

{{/*
The credentials clients of this release use, as JSON: {"method": "basic", "username",
"secretName", "secretKey"}; {"method": "oidc", "clientId", "secretName", "secretKey",
"tokenUrl", "audience"} (the Jobs' OAuth client); or {} with authentication.method none.
*/}}
{{- define "rill.credentials" -}}
{{- $auth := include "rill.authentication" . | fromJson -}}
{{- if eq $auth.method "basic" -}}
{{- toJson (dict "method" "basic" "username" $auth.username "secretName" (include "rill.adminSecretName" .) "secretKey" $auth.passwordKey) -}}
{{- else if eq $auth.method "oidc" -}}
{{- include "rill.oidcClientCredentials" . -}}
{{- else -}}
{{- toJson dict -}}
{{- end -}}
{{- end }}

{{/*
The credentials the running brokers were started with, read from the StatefulSet in the
cluster (as rill.shape reads its shape), in the form of rill.credentials: the pre-upgrade
scale Jobs talk to those brokers, before this release changes their settings.
*/}}
{{- define "rill.runningCredentials" -}}
{{- $found := dict -}}
{{- $existing := lookup "apps/v1" "StatefulSet" .Release.Namespace (include "rill.brokerName" .) -}}
{{- if $existing }}
{{- $env := dict -}}
{{- range $container := $existing.spec.template.spec.containers }}
{{- if eq $container.name "broker" }}
{{- range $entry := $container.env }}
{{- $_ := set $env $entry.name $entry -}}
{{- end }}
{{- end }}
{{- end }}
{{- $method := get (get $env "RILL_SECURITY__AUTHENTICATION__METHOD" | default dict) "value" | default "none" -}}
{{- $username := get (get $env "RILL_SECURITY__INITIALIZATION__USERS__0__USERNAME" | default dict) "value" -}}
{{- $password := get (get $env "RILL_SECURITY__INITIALIZATION__USERS__0__PASSWORD" | default dict) "valueFrom" | default dict -}}
{{- $ref := get $password "secretKeyRef" | default dict -}}
{{- if and (eq $method "basic") $username $ref.name $ref.key }}
{{- $found = dict "method" "basic" "username" $username "secretName" $ref.name "secretKey" $ref.key -}}
{{- else if eq $method "oidc" }}
{{- /* Running brokers with oidc accept the provider's tokens: the Jobs' client gets one. */ -}}
{{- $found = include "rill.oidcClientCredentials" . | fromJson -}}
{{- end }}
{{- end }}
{{- toJson $found -}}
{{- end }}

{{/*
A pod's authentication settings. basic, from rill.credentials: the admin user is Rill's
first user. oidc: the provider's settings.
*/}}
{{- define "rill.authEnv" -}}
{{- $auth := include "rill.authentication" . | fromJson -}}
{{- if eq $auth.method "oidc" }}
{{- with $auth.oidc }}
- name: RILL_SECURITY__AUTHENTICATION__METHOD
  value: "oidc"
- name: RILL_SECURITY__AUTHENTICATION__OIDC__ISSUER_URI
  value: {{ .issuerUri | quote }}
- name: RILL_SECURITY__AUTHENTICATION__OIDC__AUDIENCES
  value: {{ join "," .audiences | quote }}
- name: RILL_SECURITY__AUTHENTICATION__OIDC__USERNAME_CLAIM
  value: {{ .usernameClaim | quote }}
{{- if .clientIdClaim }}
- name: RILL_SECURITY__AUTHENTICATION__OIDC__CLIENT_ID_CLAIM
  value: {{ .clientIdClaim | quote }}
{{- end }}
{{- if .groupsClaim }}
- name: RILL_SECURITY__AUTHENTICATION__OIDC__GROUPS_CLAIM
  value: {{ .groupsClaim | quote }}
{{- end }}
- name: RILL_SECURITY__AUTHENTICATION__OIDC__CLOCK_SKEW
  value: {{ .clockSkew | quote }}
{{- end }}
{{- else if eq $auth.method "basic" }}
{{- with include "rill.credentials" . | fromJson }}
- name: RILL_SECURITY__AUTHENTICATION__METHOD
  value: "basic"
- name: RILL_SECURITY__INITIALIZATION__USERS__0__USERNAME
  value: {{ .username | quote }}
- name: RILL_SECURITY__INITIALIZATION__USERS__0__PASSWORD
  valueFrom:
    secretKeyRef:
      name: {{ .secretName }}
      key: {{ .secretKey | quote }}
{{- end }}
{{- end }}
{{- end }}

{{/*
The `rill` CLI's credentials, from credentials in the form of rill.credentials: basic,
RILL_USERNAME and RILL_PASSWORD; oidc, the client the CLI gets a token with
(RILL_CLIENT_ID, RILL_CLIENT_SECRET, RILL_OAUTH_URL, RILL_TOKEN_AUDIENCE).
*/}}
{{- define "rill.cliCredentialsEnv" -}}
{{- if eq (.method | default "") "oidc" }}
- name: RILL_CLIENT_ID
  value: {{ .clientId | quote }}
- name: RILL_CLIENT_SECRET
  valueFrom:
    secretKeyRef:
      name: {{ .secretName }}
      key: {{ .secretKey | quote }}
- name: RILL_OAUTH_URL
  value: {{ .tokenUrl | quote }}
{{- if .audience }}
- name: RILL_TOKEN_AUDIENCE
  value: {{ .audience | quote }}
{{- end }}
{{- else }}
{{- with . }}
- name: RILL_USERNAME
  value: {{ .username | quote }}
- name: RILL_PASSWORD
  valueFrom:
    secretKeyRef:
      name: {{ .secretName }}
      key: {{ .secretKey | quote }}
{{- end }}
{{- end }}
{{- end }}

{{/* The backup store's settings: the mounted backup volume or the S3 bucket, when there is one. */}}
{{- define "rill.backupEnv" -}}
{{- $s3 := .Values.backup.s3 }}
{{- if and .Values.backup.existingClaim $s3.bucket }}
{{- fail "backup.existingClaim and backup.s3.bucket are both set: choose one backup store" }}
{{- end }}
{{- if .Values.backup.existingClaim }}
- name: RILL_BACKUP__STORE
  value: filesystem
- name: RILL_BACKUP__FILESYSTEM__BASE_PATH
  value: {{ .Values.backup.mountPath | quote }}
{{- else if $s3.bucket }}
- name: RILL_BACKUP__STORE
  value: s3
- name: RILL_BACKUP__S3__BUCKET
  value: {{ $s3.bucket | quote }}
{{- with $s3.basePath }}
- name: RILL_BACKUP__S3__BASE_PATH
  value: {{ . | quote }}
{{- end }}
{{- with $s3.endpoint }}
- name: RILL_BACKUP__S3__ENDPOINT
  value: {{ . | quote }}
{{- end }}
{{- with $s3.region }}
- name: RILL_BACKUP__S3__REGION
  value: {{ . | quote }}
{{- end }}
{{- with $s3.existingSecret }}
- name: AWS_ACCESS_KEY_ID
  valueFrom:
    secretKeyRef:
      name: {{ . }}
      key: {{ $s3.accessKeyIdKey | quote }}
- name: AWS_SECRET_ACCESS_KEY
  valueFrom:
    secretKeyRef:
      name: {{ . }}
      key: {{ $s3.secretAccessKeyKey | quote }}
{{- end }}
{{- end }}
{{- end }}
