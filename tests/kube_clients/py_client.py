"""py_client.py - the official Python client (python3-kubernetes, run with
Debian's own python3) against the test API server (tests/kube_server.h),
driven by tests/test_kube_server.c.

    /usr/bin/python3 py_client.py URL SCENARIO [ARG]

Each scenario prints one line per fact the C test checks ("key value"),
and exits 0; an unexpected exception prints "error <type> <text>" and
exits 1.
  paging  N    list configmaps in namespace "default" N at a time with
               limit/_continue: "page <names> <remainingItemCount>" each, then "total <n>"
  crud         create, read, strategic-merge patch, replace (PUT), delete a
               ConfigMap; create, merge-patch, status patch, delete a DeviceConfig
  watch   RV   watch configmaps from RV with allow_watch_bookmarks and
               timeout_seconds=4, while a thread creates, patches and deletes
               "pw": "event <TYPE> <name or -> <resourceVersion>" each
  gone    RV   watch from RV (older than the server's history): "gone 410 <reason>"
  tls     CA [CERT KEY]  list configmaps over https trusting CA (with a client
               certificate for mutual TLS): "tls_list <names>"
"""
import sys
import threading
import time

from kubernetes import client, watch
from kubernetes.client.rest import ApiException


def api(url):
    cfg = client.Configuration(host=url)
    return client.ApiClient(cfg)


def paging(url, n):
    v1 = client.CoreV1Api(api(url))
    cont = None
    total = 0
    while True:
        kw = {"limit": int(n)}
        if cont:
            kw["_continue"] = cont
        lst = v1.list_namespaced_config_map("default", **kw)
        names = [i.metadata.name for i in lst.items]
        total += len(names)
        print("page %s %s" % (",".join(names) or "-", lst.metadata.remaining_item_count))
        cont = lst.metadata._continue
        if not cont:
            break
    print("total %d" % total)


def crud(url):
    a = api(url)
    v1 = client.CoreV1Api(a)
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "py", "labels": {"app": "demo"}}, "data": {"a": "1"}}
    cm = v1.create_namespaced_config_map("default", body)
    print("created %s %s %s" % (cm.metadata.name, cm.metadata.namespace, cm.data))
    try:
        v1.create_namespaced_config_map("default", body)
    except ApiException as e:
        print("again %d %s" % (e.status, "AlreadyExists" if "AlreadyExists" in e.body else e.body))
    cm = v1.read_namespaced_config_map("py", "default")
    print("read %s %s" % (cm.metadata.name, cm.data))
    cm = v1.patch_namespaced_config_map("py", "default", {"data": {"a": None, "b": "2"}, "metadata": {"labels": {"tier": "x"}}})
    print("patched %s %s" % (sorted(cm.data.items()), sorted(cm.metadata.labels.items())))
    old_rv = cm.metadata.resource_version
    cm.data["c"] = "3"
    cm = v1.replace_namespaced_config_map("py", "default", cm)
    print("replaced %s" % sorted(cm.data.items()))
    stale = v1.read_namespaced_config_map("py", "default")
    stale.metadata.resource_version = old_rv
    try:
        v1.replace_namespaced_config_map("py", "default", stale)
    except ApiException as e:
        print("stale %d %s" % (e.status, "Conflict" if '"reason":"Conflict"' in e.body else e.body))
    st = v1.delete_namespaced_config_map("py", "default")
    print("deleted %s %s" % (st.status, st.details.name if st.details else None))
    try:
        v1.read_namespaced_config_map("py", "default")
    except ApiException as e:
        print("missing %d" % e.status)
    co = client.CustomObjectsApi(a)
    g, v, plural = "edge.kctl.io", "v1", "deviceconfigs"
    dc = co.create_namespaced_custom_object(g, v, "default", plural, {
        "apiVersion": "edge.kctl.io/v1", "kind": "DeviceConfig", "metadata": {"name": "pydc"}, "spec": {"mode": "manual", "rate": 5}})
    print("cr_created %s %s %s" % (dc["metadata"]["name"], dc["metadata"]["generation"], dc["spec"]))
    dc = co.patch_namespaced_custom_object(g, v, "default", plural, "pydc", {"spec": {"mode": "auto", "rate": None}})
    print("cr_patched %s %s" % (dc["metadata"]["generation"], dc["spec"]))
    dc = co.patch_namespaced_custom_object_status(g, v, "default", plural, "pydc", {"status": {"observedGeneration": 2}})
    print("cr_status %s %s" % (dc["metadata"]["generation"], dc.get("status")))
    lst = co.list_namespaced_custom_object(g, v, "default", plural)
    print("cr_list %s %s" % (lst["kind"], [i["metadata"]["name"] for i in lst["items"]]))
    st = co.delete_namespaced_custom_object(g, v, "default", plural, "pydc")
    print("cr_deleted %s" % st.get("status"))


def watcher(url, rv):
    v1 = client.CoreV1Api(api(url))

    def writer():
        time.sleep(0.5)
        w1 = client.CoreV1Api(api(url))
        w1.create_namespaced_config_map("default", {"metadata": {"name": "pw"}, "data": {"k": "1"}})
        time.sleep(0.2)
        w1.patch_namespaced_config_map("pw", "default", {"data": {"k": "2"}})
        time.sleep(0.2)
        w1.delete_namespaced_config_map("pw", "default")

    t = threading.Thread(target=writer)
    t.start()
    w = watch.Watch()
    for ev in w.stream(v1.list_namespaced_config_map, "default", resource_version=rv,
                       allow_watch_bookmarks=True, timeout_seconds=4):
        o = ev["object"]
        if ev["type"] == "BOOKMARK":  # passed through as the raw dict
            print("event BOOKMARK - %s" % o["metadata"]["resourceVersion"])
        else:
            print("event %s %s %s" % (ev["type"], o.metadata.name, o.metadata.resource_version))
        sys.stdout.flush()
    t.join()
    print("end")


def gone(url, rv):
    v1 = client.CoreV1Api(api(url))
    w = watch.Watch()
    try:
        for ev in w.stream(v1.list_namespaced_config_map, "default", resource_version=rv, timeout_seconds=4):
            print("event %s" % ev["type"])
        print("no_error")
    except ApiException as e:
        print("gone %d %s" % (e.status, e.reason))


def tls(url, ca, cert=None, key=None):
    cfg = client.Configuration(host=url)
    cfg.ssl_ca_cert = ca
    if cert:
        cfg.cert_file = cert
        cfg.key_file = key
    v1 = client.CoreV1Api(client.ApiClient(cfg))
    lst = v1.list_namespaced_config_map("default")
    print("tls_list %s" % ",".join(i.metadata.name for i in lst.items))


def main():
    url, scenario = sys.argv[1], sys.argv[2]
    arg = sys.argv[3] if len(sys.argv) > 3 else None
    try:
        if scenario == "paging":
            paging(url, arg)
        elif scenario == "crud":
            crud(url)
        elif scenario == "watch":
            watcher(url, arg)
        elif scenario == "gone":
            gone(url, arg)
        elif scenario == "tls":
            tls(url, arg, *sys.argv[4:6])
        else:
            print("error usage %s" % scenario)
            return 2
    except Exception as e:  # the C test shows it
        print("error %s %s" % (type(e).__name__, str(e).replace("\n", " ")[:600]))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
