/**
 * The rete `retectl init` writes: three nodes, a group, a service and an ACL rule, split over files
 * the way a real rete grows. It validates without warnings and compiles as it is; its commented-out
 * resources entry does too once uncommented.
 */
export const EXAMPLE_RETE: Readonly<Record<string, string>> = {
  'rete.yaml': `# The mesh as a whole. Every *.yaml file under this folder merges into one rete.
mesh:
  name: example
  coordinator: https://coordinator.example.net
  # How you reach the servers when the mesh is down. A publish activates with no confirmation window,
  # so never make the mesh the only way in; validate warns when a server publishes SSH over the mesh
  # and this is missing. A note for people: it is compiled into nothing.
  safety_net: cloud provider serial console; backup sshd on 192.0.2.10:2222 (admin VPN, not published)

defaults:
  sync:
    poll_interval: 5m   # how often each agent polls for a new bundle
    splay: 30s          # random jitter added to each poll

# Host resources: files and packages a node's host must hold, for one node (resources: in the
# node) or for every node a selector picks. Uncomment to give the web servers a message of the day:
# resources:
#   - select: { tags: [web] }
#     files:
#       - path: /etc/motd
#         content: "managed by Florete: local edits are overwritten\\n"
#         mode: "0644"
`,
  'nodes/servers.yaml': `nodes:
  - name: alpha
    kind: server
    listen: 10.0.0.1:7946
    tags: [web]
    services:
      - name: web
        port: 443
        protocol: tcp

  - name: beta
    kind: server
    listen: 10.0.0.2:7946
    tags: [backend]
    sync:
      poll_interval: 1m
`,
  'nodes/devices.yaml': `nodes:
  - name: laptop
    kind: device
    listen: 192.168.1.20:7946
    tags: [staff]
`,
  'policy.yaml': `groups:
  - name: ops
    members: [beta, laptop]

acl:
  - description: operators reach the web front end
    from: [group:ops]
    to: [alpha:web]
`,
};
