import Foundation
import NetExtCore
import NetExtIPC
import NetExtLinux

/// An app proxy's side of its flow channel (descriptor 4, ``AppProxyFlowCodec``): receives each
/// flow netextd hands over with its socket, asks the provider, and answers netextd. A declined
/// flow is reset, as Apple's app proxy closes the flows it does not handle — or, for a
/// transparent proxy (`returnsDeclinedFlows`), goes back to netextd with the answer, to be sent
/// on directly.
enum AppProxyFlowServer {
    static func start(_ provider: any AppProxyProvider, channel: Int32, returnsDeclinedFlows: Bool) {
        let thread = Thread { serve(provider, channel: channel, returnsDeclinedFlows: returnsDeclinedFlows) }
        thread.name = "netext-proxy-flows"
        thread.start()
    }

    private static func serve(_ provider: any AppProxyProvider, channel: Int32, returnsDeclinedFlows: Bool) {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: AppProxyFlowCodec.maximumMessage, alignment: 8)
        defer { buffer.deallocate() }
        while true {
            let received: (length: Int, descriptor: Int32?)
            do { received = try DescriptorMessages.receive(into: buffer, over: channel) } catch {
                FileHandle.standardError.write(Data("app proxy: the flow channel failed: \(error)\n".utf8))
                return
            }
            if received.length == 0 { return }
            let offer: AppProxyFlowOffer
            do { offer = try AppProxyFlowCodec.decodeOffer(UnsafeRawBufferPointer(rebasing: buffer[..<received.length])) } catch {
                if let fd = received.descriptor { StreamIO.reset(fd) }
                FileHandle.standardError.write(Data("app proxy: malformed flow from netextd: \(error)\n".utf8))
                continue
            }
            guard let fd = received.descriptor else {
                FileHandle.standardError.write(Data("app proxy: flow \(offer.id) arrived without its socket\n".utf8))
                continue
            }
            if offer.transport == .udp {
                let flow = AppProxyUDPFlow(offer: offer, descriptor: fd)
                let handled = provider.handleNewUDPFlow(flow, initialRemoteEndpoint: offer.remoteEndpoint)
                // As a TCP flow's: back to netextd (transparent proxy, sent on), or closed.
                let returned = !handled && returnsDeclinedFlows ? flow.takeDescriptor() : nil
                if !handled && returned == nil { flow.close() }
                defer { if let returned { SocketPair.close(returned) } }
                do {
                    try DescriptorMessages.send(AppProxyFlowCodec.encode(AppProxyFlowCodec.Answer(flowID: offer.id, handled: handled)), descriptor: returned, over: channel)
                } catch {
                    return
                }
                if handled { flow.endNotice.arm(endedSender(channel, offer.id)) }
                continue
            }
            let flow = AppProxyTCPFlow(offer: offer, descriptor: fd)
            let handled = provider.handleNewFlow(flow)
            // A declined flow's socket goes back with the answer (transparent proxy) or is reset.
            let returned = !handled && returnsDeclinedFlows ? flow.takeDescriptor() : nil
            if !handled && returned == nil { flow.reset() }
            defer { if let returned { SocketPair.close(returned) } }
            do {
                try DescriptorMessages.send(AppProxyFlowCodec.encode(AppProxyFlowCodec.Answer(flowID: offer.id, handled: handled)), descriptor: returned, over: channel)
            } catch {
                return
            }
            if handled { flow.endNotice.arm(endedSender(channel, offer.id)) }
        }
    }

    /// What tells netextd that taken flow `id` ended (a lost notice, the channel gone, matters
    /// no more: the session is ending).
    private static func endedSender(_ channel: Int32, _ id: UInt64) -> @Sendable () -> Void {
        { try? DescriptorMessages.send(AppProxyFlowCodec.encodeEnded(flowID: id), descriptor: nil, over: channel) }
    }
}
