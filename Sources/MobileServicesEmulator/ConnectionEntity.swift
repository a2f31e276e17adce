import Foundation

/// The connection entity: the fixed fields of the tutorials' `applications.Connection`, and its ETag.
extension EmulatorResponder {
    func entityJSON(_ registration: Registration, uri: String) -> JSONValue {
        let emptyResults = JSONValue.object([("results", .array([]))])
        return .object([
            ("__metadata", .object([("id", .string(uri)), ("uri", .string(uri)), ("type", .string("applications.Connection"))])),
            ("ETag", .string(Self.etag(milliseconds: registration.createdAtMilliseconds))),
            ("ApplicationConnectionId", .string(registration.applicationConnectionId)),
            ("UserName", .string(registration.user)),
            ("AndroidGcmPushEnabled", .bool(false)),
            ("AndroidGcmRegistrationId", .null),
            ("ApnsPushEnable", .bool(false)),
            ("ApnsDeviceToken", .null),
            ("ApplicationVersion", .string("1.0")),
            ("CollectClientUsageReports", .bool(false)),
            ("ConnectionLogLevel", .string("NONE")),
            ("CustomizationBundleId", .null),
            ("DeviceModel", .optionalString(registration.deviceModel)),
            ("DeviceType", .string(registration.deviceType)),
            ("DeviceSubType", .null),
            ("DevicePhoneNumber", .null),
            ("DeviceIMSI", .null),
            ("E2ETraceLevel", .string("Low")),
            ("FeatureVectorPolicyAllEnabled", .bool(true)),
            ("FormFactor", .null),
            ("LogEntryExpiry", .int(7)),
            ("MaxConnectionWaitTimeForClientUsage", .int(30)),
            ("PasswordPolicyEnabled", .bool(false)),
            ("PasswordPolicyDefaultPasswordAllowed", .bool(true)),
            ("PasswordPolicyMinLength", .int(8)),
            ("PasswordPolicyDigitRequired", .bool(false)),
            ("PasswordPolicyUpperRequired", .bool(false)),
            ("PasswordPolicyLowerRequired", .bool(false)),
            ("PasswordPolicySpecialRequired", .bool(false)),
            ("PasswordPolicyExpiresInNDays", .int(0)),
            ("PasswordPolicyMinUniqueChars", .int(0)),
            ("PasswordPolicyLockTimeout", .int(300)),
            ("PasswordPolicyRetryLimit", .int(10)),
            ("PasswordPolicyFingerprintEnabled", .bool(true)),
            ("ProxyApplicationEndpoint", .string("https://sapes4.sapdevcenter.com/sap/opu/odata/IWFND/RMTSAMPLEFLIGHT/")),
            ("ProxyPushEndpoint", .null),
            ("PublishedToMobilePlace", .bool(false)),
            ("UploadLogs", .bool(false)),
            ("InAppMessaging", .bool(false)),
            ("UserLocale", .null),
            ("TimeZone", .null),
            ("LastKnownLocation", .null),
            ("CreatedAt", .odataDate(registration.createdAtMilliseconds)),
            ("PushGroup", .null),
            ("Email", .null),
            ("Capability", emptyResults),
            ("FeatureVectorPolicy", emptyResults),
        ])
    }

    /// `2017-01-10 06:10:33.406` (UTC), the tutorials' ETag format with milliseconds.
    static func etag(milliseconds: Int64) -> String {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(secondsFromGMT: 0)!
        let date = Date(timeIntervalSince1970: Double(milliseconds) / 1000)
        let c = calendar.dateComponents([.year, .month, .day, .hour, .minute, .second], from: date)
        func pad(_ value: Int?, _ width: Int) -> String {
            let text = String(value ?? 0)
            return String(repeating: "0", count: max(0, width - text.count)) + text
        }
        let millis = Int(((milliseconds % 1000) + 1000) % 1000)
        return "\(pad(c.year, 4))-\(pad(c.month, 2))-\(pad(c.day, 2)) \(pad(c.hour, 2)):\(pad(c.minute, 2)):\(pad(c.second, 2)).\(pad(millis, 3))"
    }
}
