/**
 * The rete `retectl init` writes: three nodes, a group, a service and an ACL rule, split over files
 * the way a real rete grows. It validates without warnings and compiles as it is; its commented-out
 * resources entries and rollout block do too once uncommented (repository.yaml's once its key file is in the rete).
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

# How a publish goes out: uncomment to send each change to the staff laptop first, then to the
# rest in two waves, each running 10 minutes before the next. publish --no-rollout skips it once.
# rollout: { canary: { tags: [staff] }, waves: [50, 100], bake: 10m }
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
  'repository.yaml': `# The mesh's package repository: the coordinator serves a signed apt repository of what
# \`retectl package push\` uploaded, at <mesh.coordinator>/repo/debian/. Two file resources point a
# node's apt at it: the source list, and the key apt checks the repository's signature with. To use
# it, put the key into the rete (retectl package key > files/florete.gpg), uncomment the entry
# below, set its URL to your coordinator's, and publish. Then a \`packages:\` entry (name and exact version) installs a package from it on these nodes.
# resources:
#   - select: { tags: [web, backend] }
#     description: the mesh's apt repository
#     files:
#       - path: /etc/apt/sources.list.d/florete.list
#         content: "deb [signed-by=/usr/share/keyrings/florete.gpg] https://coordinator.example.net/repo/debian/ ./\\n"
#         mode: "0644"
#       - path: /usr/share/keyrings/florete.gpg
#         source: files/florete.gpg
#         mode: "0644"
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
