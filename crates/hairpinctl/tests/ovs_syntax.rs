//! What `hairpinctl` prints is accepted by `ovs-ofctl` itself (Open vSwitch's parser is the
//! reference for this syntax). Skipped, with the reason printed, without `ovs-ofctl`.
//! Fields and actions that OVS lacks (`pbb_isid`, `copy_ttl_*`, InSP) are left out.

use std::process::Command;

use hairpinctl::syntax::flow::{format_flow, parse_flow, FlowUse};
use hairpinctl::syntax::group::{format_group, parse_group};

fn ovs_ofctl_present() -> bool {
    let present = Command::new("ovs-ofctl").arg("--version").output().is_ok();
    if !present {
        testkit::cannot_run("ovs_syntax", "ovs-ofctl is not installed");
    }
    present
}

const FLOWS: &[&str] = &[
    "cookie=0x1234,idle_timeout=60,hard_timeout=90,send_flow_rem,priority=200,tcp,nw_src=10.0.0.0/8,tp_dst=80 actions=dec_ttl,output:3",
    "priority=50,dl_vlan=10,vlan_pcp=3,dl_src=00:00:00:00:00:02/ff:ff:ff:00:00:00 actions=pop_vlan,normal",
    "priority=40,ipv6,ipv6_dst=2001:db8::/32,ipv6_src=::1,ipv6_label=0x12345,ip_dscp=4,nw_ecn=1 actions=controller:128",
    "table=3,udp,udp_src=53,nw_dst=10.1.0.0/255.255.0.255 actions=set_field:10.0.0.9->nw_dst,goto_table:4",
    "table=1,priority=10,metadata=0x5/0xff,tun_id=0x7 actions=write_actions(output:4,group:2),write_metadata:0x1/0x1",
    "arp,arp_op=1,arp_spa=10.0.0.0/24,arp_tpa=10.0.0.1,arp_sha=00:00:00:00:00:01,arp_tha=00:00:00:00:00:02 actions=flood",
    "icmp6,icmpv6_type=135,icmpv6_code=0,nd_target=fe80::1,nd_sll=00:00:00:00:00:03 actions=meter:1,clear_actions,local",
    "icmp6,icmpv6_type=136,nd_tll=00:00:00:00:00:04 actions=in_port",
    "icmp,icmp_type=8,icmp_code=0 actions=all",
    "sctp,sctp_src=1,sctp_dst=2,in_port=LOCAL actions=mod_dl_src:00:00:00:00:00:09,mod_dl_dst:00:00:00:00:00:0a",
    "mpls,mpls_label=5,mpls_tc=1,mpls_bos=1 actions=pop_mpls:0x0800,output(port=3,max_len=128)",
    "dl_vlan=0xffff actions=push_vlan:0x8100,mod_vlan_vid:5,set_queue:2,group:1",
    "vlan_vid=0x1000/0x1000 actions=drop",
    "ip actions=mod_nw_ttl:5,push_mpls:0x8847,set_mpls_ttl:3,dec_mpls_ttl,output:1",
    "priority=300,in_port=2,ip,nw_dst=10.0.3.0/24,nw_ttl=1 actions=drop",
    "ipv6,nw_ttl=1 actions=controller",
    "dl_vlan=3 actions=set_field:00:00:00:00:00:01->eth_src,set_field:4101->vlan_vid",
];

#[test]
fn ovs_ofctl_accepts_printed_flows() {
    if !ovs_ofctl_present() {
        return;
    }
    let printed: Vec<String> = FLOWS
        .iter()
        .map(|f| format_flow(&parse_flow(f, FlowUse::Add).unwrap_or_else(|e| panic!("{f}: {e}"))))
        .collect();
    let dir = std::env::temp_dir().join(format!("hpctl-ovs-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("flows.txt");
    std::fs::write(&file, printed.join("\n")).unwrap();
    let out = Command::new("ovs-ofctl")
        .args(["-O", "OpenFlow13", "parse-flows"])
        .arg(&file)
        .output()
        .unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(
        out.status.success(),
        "ovs-ofctl rejected:\n{}\n{}",
        printed.join("\n"),
        String::from_utf8_lossy(&out.stderr)
    );
    let listing = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        listing.matches("OFPT_FLOW_MOD (OF1.3)").count(),
        FLOWS.len()
    );
}

const GROUPS: &[&str] = &[
    "group_id=1,type=select,bucket=weight:10,actions=output:1,bucket=weight:5,actions=output:2",
    "group_id=2,type=all,bucket=actions=output:3,bucket=actions=set_field:10.0.0.1->nw_dst,output:4",
    "group_id=3,type=indirect,bucket=actions=group:1",
    "group_id=4,type=ff,bucket=watch_port:1,actions=output:1,bucket=watch_port:2,actions=output:2",
];

#[test]
fn ovs_ofctl_reads_printed_groups_the_same_way() {
    if !ovs_ofctl_present() {
        return;
    }
    for text in GROUPS {
        let printed = format_group(&parse_group(text).unwrap());
        let out = Command::new("ovs-ofctl")
            .args(["-O", "OpenFlow13", "parse-group", &printed])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{printed}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let listing = String::from_utf8_lossy(&out.stdout);
        let ovs_line = listing
            .lines()
            .find_map(|l| l.trim().strip_prefix("ADD "))
            .unwrap_or_else(|| panic!("no ADD line in {listing}"));
        assert_eq!(
            parse_group(ovs_line),
            parse_group(&printed),
            "OVS printed {ovs_line}"
        );
    }
}
