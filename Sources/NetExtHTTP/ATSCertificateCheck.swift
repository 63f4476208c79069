/// The certificate rules of ATS, applied to the server's own certificate once TLS has checked
/// its chain, name and dates.
enum ATSCertificateCheck {
    /// The first rule the certificate breaks, or nil.
    static func refusal(_ facts: CertificateFacts, _ requirements: ATSRequirements) -> ATSRefusal? {
        func refused(_ rule: ATSRule, _ detail: String) -> ATSRefusal {
            ATSRefusal(rule: rule, detail: detail, domain: requirements.domain, source: requirements.source)
        }
        if !requirements.pinnedLeafIdentities.isEmpty && !requirements.pinnedLeafIdentities.contains(facts.spkiSHA256Base64) {
            return refused(.pinning, "the server's key (SPKI-SHA256-BASE64 \(facts.spkiSHA256Base64)) is not one of the \(requirements.pinnedLeafIdentities.count) NSPinnedLeafIdentities")
        }
        if !requirements.pinnedCAIdentities.isEmpty {
            return refused(.pinning, "NSPinnedCAIdentities cannot be checked: NetExtHTTP sees only the server's own certificate, not its issuers (pin the server's key with NSPinnedLeafIdentities)")
        }
        if requirements.requiresStrongCertificates {
            switch facts.key {
            case .rsa(let bits) where bits < 2048:
                return refused(.keySize, "the server's certificate has an RSA \(bits)-bit key (2048 or more required)")
            case .ellipticCurve(let name, let bits) where bits < 256:
                return refused(.keySize, "the server's certificate has an ECC key on \(name) (\(bits) bits; 256 or more required)")
            default: break
            }
            if facts.signatureHash == "SHA-1" || facts.signatureHash == "MD5" || facts.signatureHash == "unknown" {
                return refused(.signatureHash, "the server's certificate is signed with \(facts.signatureAlgorithm) (SHA-2 required)")
            }
        }
        if requirements.requiresCertificateTransparency && !facts.hasEmbeddedSCTs {
            return refused(.certificateTransparency, "the server's certificate carries no embedded signed certificate timestamps (SCTs delivered in the TLS handshake or by OCSP are not read)")
        }
        return nil
    }
}
